"""Database URLs, durations and names: parsed and validated before anything is written."""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit

from .errors import ConfigError

URL_ENV = "BATCHQ_URL"
SCHEMES = {
    "sqlite": "sqlite",
    "mysql": "mysql",
    "mysql+pymysql": "mysql",
    "mariadb": "mysql",
    "postgresql": "postgresql",
    "postgres": "postgresql",
}
QUEUE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)", re.IGNORECASE)
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def default_sqlite_path() -> Path:
    data_home = os.environ.get("XDG_DATA_HOME") or os.path.join(Path.home(), ".local", "share")
    return Path(data_home) / "batchq" / "batchq.db"


@dataclass(frozen=True)
class DatabaseURL:
    """A parsed database URL. Its repr and str never show the password."""

    dialect: str
    host: str = ""
    port: int | None = None
    user: str = ""
    password: str = field(default="", repr=False)
    database: str = ""
    options: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        if self.dialect == "sqlite":
            return f"sqlite:///{self.database}"
        auth = f"{self.user}:***@" if self.password else (f"{self.user}@" if self.user else "")
        port = f":{self.port}" if self.port else ""
        return f"{self.dialect}://{auth}{self.host}{port}/{self.database}"


def resolve_url(url: str | None) -> str:
    """The URL to use: the argument, then $BATCHQ_URL, then the SQLite default."""
    return url or os.environ.get(URL_ENV) or f"sqlite:///{default_sqlite_path()}"


def parse_url(url: str) -> DatabaseURL:
    """Parse a database URL; errors name the problem without echoing a password."""
    scheme, sep, _ = url.partition("://")
    if not sep or scheme.lower() not in SCHEMES:
        raise ConfigError(
            f"bad database URL {_redact(url)!r}: expected sqlite:///path/to/file.db, "
            "mysql://user:pass@host:3306/db or postgresql://user:pass@host:5432/db"
        )
    dialect = SCHEMES[scheme.lower()]
    if dialect == "sqlite":
        path = url.split("://", 1)[1]
        if not path.startswith("/") or path == "/":
            raise ConfigError(
                f"bad SQLite URL {url!r}: use sqlite:///relative.db or sqlite:////absolute/path.db"
            )
        path = path[1:]
        return DatabaseURL("sqlite", database=path if path == ":memory:" else str(Path(path)))
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError as exc:
        raise ConfigError(f"bad port in database URL {_redact(url)!r}: {exc}") from None
    database = unquote(parts.path.lstrip("/"))
    if not parts.hostname or not database:
        raise ConfigError(
            f"bad database URL {_redact(url)!r}: it needs a host and a database name, "
            f"as in {dialect}://user:pass@127.0.0.1/mydb"
        )
    return DatabaseURL(
        dialect,
        host=parts.hostname,
        port=port,
        user=unquote(parts.username or ""),
        password=unquote(parts.password or ""),
        database=database,
        options=dict(parse_qsl(parts.query)),
    )


def _redact(url: str) -> str:
    return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", url)


def redact(text: str, url: DatabaseURL) -> str:
    """Remove the URL's password from any text (driver messages can echo it)."""
    return text.replace(url.password, "***") if url.password else text


def parse_duration(value: str | float | int) -> float:
    """'90', '90s', '15m', '1h30m', '2d', '250ms' -> seconds."""
    if isinstance(value, (int, float)):
        seconds = float(value)
    else:
        text = value.strip()
        if re.fullmatch(r"\d+(\.\d+)?", text):
            seconds = float(text)
        else:
            pieces = _DURATION.findall(text)
            if not pieces or _DURATION.sub("", text).strip():
                raise ConfigError(
                    f"bad duration {value!r}: use a number of seconds or units, as in 90s, 15m, 1h30m, 2d"
                )
            seconds = sum(float(n) * _UNIT_SECONDS[unit.lower()] for n, unit in pieces)
    if not math.isfinite(seconds) or seconds < 0:
        raise ConfigError(f"bad duration {value!r}: it must be a finite number of seconds, 0 or more")
    return seconds


def check_queue_name(name: str) -> str:
    if not isinstance(name, str) or not QUEUE_NAME.match(name):
        raise ConfigError(
            f"bad queue name {name!r}: use 1-64 letters, digits, '_', '-', '.', ':', "
            "starting with a letter or digit"
        )
    return name
