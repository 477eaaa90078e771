"""The allowed module: its own functions are tasks; what it imports is not."""

from __future__ import annotations

import asyncio
import os  # noqa: F401 - a row must not reach os.system through it
import subprocess  # noqa: F401 - nor subprocess.getoutput
import sys
from os import system  # noqa: F401 - nor a builtin imported by name
from pathlib import Path
from subprocess import getoutput  # noqa: F401 - nor a function imported by name
from typing import Any

from hostile_app import helpers  # noqa: F401 - a module bound as an attribute
from hostile_app.evil import Evil, evil_touch  # noqa: F401 - defined elsewhere

CONFIG: dict[str, str] = {"greeting": "configured"}


def touch(path: str) -> None:
    Path(path).write_text("touch")


def _private_touch(path: str) -> None:
    Path(path).write_text("private")


class Mailer:
    def __init__(self, greeting: str = "default") -> None:
        self.greeting = greeting

    def send(self, path: str) -> None:
        Path(path).write_text(self.greeting)

    @staticmethod
    def static_send(path: str) -> None:
        Path(path).write_text("static")

    @classmethod
    def class_send(cls, path: str) -> None:
        Path(path).write_text(f"class {cls.__name__}")


class Child(Evil):
    """Defined here, but its methods come from hostile_app.evil."""


mailer = Mailer("configured")  # a configured module-level object
evil_object = Evil()  # defined here, of a class from elsewhere


async def async_touch(path: str) -> None:
    await asyncio.sleep(0)
    Path(path).write_text("async")


def returns_coroutine(path: str) -> Any:
    return async_touch(path)


async def async_false(payload: Any = None) -> bool:
    return False


def generator_touch(path: str) -> Any:
    Path(path).write_text("generator")
    yield


def exits(payload: Any = None) -> None:
    sys.exit(3)


def interrupts(payload: Any = None) -> None:
    raise KeyboardInterrupt


class Odd(BaseException):
    pass


def raises_base_exception(payload: Any = None) -> None:
    raise Odd("not an Exception")


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("__str__ is broken")


class Unreadable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("__str__ is broken")

    def __repr__(self) -> str:
        raise RuntimeError("__repr__ is broken")


def raises_unprintable(payload: Any = None) -> None:
    raise Unprintable("hidden")


def raises_unreadable(payload: Any = None) -> None:
    raise Unreadable("hidden")
