"""The task module the documentation's examples call `myapp.jobs`: the reader's own tasks, here
plain functions that do nothing much, so that the examples run as written
(tests/acceptance/test_doc_examples.py puts this folder on their PYTHONPATH)."""

from __future__ import annotations

from typing import Any


def send_mail(payload: dict[str, Any]) -> None:
    print("mail to", payload["to"])


def sync_account(payload: dict[str, Any]) -> None: ...


def send_invoice(payload: dict[str, Any]) -> None: ...


def render_report(payload: dict[str, Any]) -> None: ...


def charge(payload: dict[str, Any]) -> None: ...


def render(payload: dict[str, Any]) -> dict[str, Any]:
    return {"pages": 12, "id": payload["id"]}


def resize(payload: dict[str, Any]) -> None: ...


def send_digest(payload: dict[str, Any]) -> None: ...


def pulse(payload: dict[str, Any]) -> None: ...


def send_confirmation(payload: dict[str, Any]) -> None: ...


def fetch(payload: dict[str, Any]) -> None: ...


def clean(payload: dict[str, Any]) -> None: ...


def report(payload: dict[str, Any]) -> None: ...


def extract(payload: dict[str, Any]) -> None: ...


def load(payload: dict[str, Any]) -> None: ...


def publish_album(payload: dict[str, Any]) -> None: ...


def resize_all(payload: dict[str, Any]) -> None:
    """docs/guides/progress.md shows this one as written."""
    import batchq

    images = payload["images"]
    for done, name in enumerate(images, start=1):
        ...  # resize the image called name
        batchq.progress(done / len(images), f"resized {done} of {len(images)}: {name}")
