"""Database URLs, durations and names: parsed and validated before anything is written."""

from __future__ import annotations

import ipaddress
import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from urllib.parse import parse_qsl, quote, unquote

from ..errors import ConfigError

URL_ENV = "BATCHQ_URL"
DEFAULT_PORTS = {"mysql": 3306, "postgresql": 5432}
SCHEMES = {
    "sqlite": "sqlite",
    "mysql": "mysql",
    "mysql+pymysql": "mysql",
    "mariadb": "mysql",
    "postgresql": "postgresql",
    "postgres": "postgresql",
}
QUEUE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")  # used with fullmatch: no "\n" at the end
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)", re.IGNORECASE)
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
# 100 years: within every backend's timestamps from now, and within threading's timeout limit.
MAX_DURATION_SECONDS = 36525 * 86400
Duration = float | int | Decimal | str | timedelta
PERCENT_ENCODE_HINT = (
    "percent-encode special characters in the password (%40 for @, %2F for /, %3F for ?, %23 for #)"
)
_USER = re.compile(r"[^:/?#@]*")
_AFTER_USERINFO = re.compile(r"(?P<hosts>[^/?#@]+)/(?P<database>[^/?#@]+)(?:\?(?P<query>[^#]*))?")
# One host of the host list: host[:port], an IPv6 address in brackets.
_HOST_PORT = re.compile(r"(?P<host>\[[0-9A-Fa-f:.]+\]|[^:\[\],]+)(?::(?P<port>[^,]*))?")
_HOST_LABEL = re.compile(r"(?!-)[A-Za-z0-9_-]{1,63}")
# connect_timeout in whole seconds; PyMySQL refuses 0, libpq takes it as "wait forever".
CONNECT_TIMEOUT_RANGE = {"mysql": (1, 24 * 3600), "postgresql": (0, 24 * 3600)}
# What the MySQL backend reads from a URL; anything else (a typo like sslmod=) is refused, not ignored.
# batchq's own options in a MySQL or PostgreSQL URL, never passed to the driver: how a worker
# shows it is alive (liveness=session|lease) and, with leases, for how long a lease lasts.
BATCHQ_URL_OPTIONS = ("liveness", "lease")
LIVENESS_CHOICES = ("session", "lease")
DEFAULT_LEASE_SECONDS = 30.0
LEASE_RANGE_SECONDS = (3.0, 24 * 3600.0)  # renewed every third of it: at least once a second
MYSQL_URL_OPTIONS = ("connect_timeout", "sslmode", "sslrootcert", "skip_locked", *BATCHQ_URL_OPTIONS)
# skip_locked=off: claim as on a server without SKIP LOCKED (to try that path, or measure it).
SKIP_LOCKED_CHOICES = ("auto", "off")
# PostgreSQL options batchq reads itself (libpq is not given them); the others go to libpq.
# pgbouncer=transaction: a PgBouncer pooling by transaction sits between (no session state);
# session: one pooling by session (as a direct connection). Without it, batchq refuses a pooler
# it detects (see backends/postgresql.py).
POSTGRESQL_BATCHQ_OPTIONS = ("pgbouncer",)
PGBOUNCER_CHOICES = ("transaction", "session")
# libpq's choices (PostgreSQL 14+): with several hosts, which one a connection settles on.
TARGET_SESSION_ATTRS = ("any", "read-write", "read-only", "primary", "standby", "prefer-standby")
_SSL_MODES = {
    "mysql": ("disable", "prefer", "require", "verify-ca", "verify-full"),
    "postgresql": ("disable", "allow", "prefer", "require", "verify-ca", "verify-full"),
}


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
    # PostgreSQL's multi-host form (h1:p1,h2:p2): the hosts after the first (host, port), tried
    # in turn by libpq (a failover pair, with target_session_attrs=read-write).
    more_hosts: tuple[tuple[str, int | None], ...] = ()

    def __str__(self) -> str:
        if self.dialect == "sqlite":
            return f"sqlite:///{self.database}"
        auth = f"{self.user}:***@" if self.password else (f"{self.user}@" if self.user else "")
        hosts = ",".join(_host_port_text(host, port) for host, port in self.hosts)
        return f"{self.dialect}://{auth}{hosts}/{self.database}"

    @property
    def hosts(self) -> tuple[tuple[str, int | None], ...]:
        """Every host of the URL, the first one first."""
        return ((self.host, self.port), *self.more_hosts)


def _host_port_text(host: str, port: int | None) -> str:
    shown = f"[{host}]" if ":" in host else host  # IPv6
    return f"{shown}:{port}" if port else shown


def resolve_url(url: str | None) -> str:
    """The URL to use: the argument, then $BATCHQ_URL, then the SQLite default."""
    return url or os.environ.get(URL_ENV) or f"sqlite:///{default_sqlite_path()}"


def parse_url(url: str) -> DatabaseURL:
    """Parse a database URL; errors name the problem and never echo the password."""
    scheme, sep, rest = url.strip().partition("://")  # a URL read from a file may end in "\n"
    if not sep or scheme.lower() not in SCHEMES:
        shown = f" scheme {scheme!r}" if sep and "@" not in scheme else ""
        raise ConfigError(
            f"bad database URL{shown}: expected sqlite:///path/to/file.db, "
            "mysql://user:pass@host:3306/db or postgresql://user:pass@host:5432/db"
        )
    dialect = SCHEMES[scheme.lower()]
    if dialect == "sqlite":
        return _parse_sqlite(url, rest)
    return _parse_server(dialect, rest)


def _parse_sqlite(url: str, rest: str) -> DatabaseURL:
    if not rest.startswith("/") or rest == "/":
        raise ConfigError(f"bad SQLite URL {url!r}: use sqlite:///relative.db or sqlite:////absolute/path.db")
    path = rest[1:]
    return DatabaseURL("sqlite", database=path if path == ":memory:" else str(Path(path)))


def _parse_server(dialect: str, rest: str) -> DatabaseURL:
    """scheme://[user[:password]@]host[:port]/database[?options] for MySQL and PostgreSQL.

    A password may hold unencoded '/', '?', '#' and '@': the userinfo ends at the '@' after
    which the rest reads as host[:port]/database[?options]. When no '@', or more than one,
    gives such a reading, the URL is refused without echoing any of it.
    """
    readings = [match for start in _host_starts(rest) if (match := _reading(rest, start))]
    if len(readings) != 1:
        problem = "it cannot be read as" if not readings else "it reads more than one way as"
        also = "" if not readings else ", and '@' in the options as %40"
        raise ConfigError(
            f"bad database URL {_shown(dialect, rest)}: {problem} "
            f"{dialect}://user:password@host:port/database; {PERCENT_ENCODE_HINT}{also}"
        )
    start, parts = readings[0]
    user, _, password = rest[: start - 1].partition(":") if start else ("", "", "")
    parsed = DatabaseURL(
        dialect, user=unquote(user), password=unquote(password), database=unquote(parts["database"])
    )
    hosts = _hosts(dialect, parts["hosts"], parsed)
    parsed = replace(parsed, host=hosts[0][0], port=hosts[0][1], more_hosts=tuple(hosts[1:]))
    options = _options(dialect, parts["query"] or "", parsed)
    if "password" in options:  # libpq's form; one place for it, so it is masked like the other
        if parsed.password:
            raise ConfigError(f"two passwords for {parsed}: give it once, before the host")
        parsed = replace(parsed, password=options.pop("password"))
    return replace(parsed, options=options)


def _host_starts(rest: str) -> list[int]:
    """Where the host may begin: at the start (no userinfo), or after any '@'."""
    return [0] + [index + 1 for index, char in enumerate(rest) if char == "@"]


def _reading(rest: str, start: int) -> tuple[int, dict[str, str]] | None:
    if start and not _USER.fullmatch(rest[: start - 1].partition(":")[0]):
        return None
    match = _AFTER_USERINFO.fullmatch(rest, start)
    return (start, match.groupdict()) if match else None


def _shown(dialect: str, rest: str) -> str:
    """A refused URL as it may be shown: whole when it has no userinfo (so no password)."""
    if "@" in rest:
        return f"{dialect}://…"
    return repr(f"{dialect}://{rest.partition('?')[0]}")


def _hosts(dialect: str, text: str, url: DatabaseURL) -> list[tuple[str, int | None]]:
    """host[:port], or on PostgreSQL a list of them joined by commas (libpq's multi-host form)."""
    entries = text.split(",")
    if len(entries) > 1 and dialect != "postgresql":
        raise ConfigError(
            f"bad host list {unquote(text)!r} in the database URL: a {dialect} URL names one server "
            "(host:port); several hosts joined by commas are PostgreSQL's form"
        )
    hosts = []
    for entry in entries:
        match = _HOST_PORT.fullmatch(entry)
        if match is None:
            where = f" (entry {entry!r} of {unquote(text)!r})" if len(entries) > 1 else ""
            raise ConfigError(
                f"bad host {unquote(entry)!r} in the database URL{where}: use host:port, an IPv6 "
                "address as [::1]:port, and on PostgreSQL host1:port1,host2:port2 for several"
            )
        host = _host(match["host"])
        hosts.append((host, _port(match["port"], replace(url, host=host))))
    return hosts


def _host(text: str) -> str:
    host = unquote(text)
    if host.startswith("["):
        try:
            return str(ipaddress.IPv6Address(host[1:-1]))
        except ValueError:
            raise ConfigError(f"bad host {host!r} in the database URL: not an IPv6 address") from None
    try:
        ascii_host = host.encode("idna").decode("ascii")
    except UnicodeError:
        ascii_host = ""
    labels = ascii_host[:-1].split(".") if ascii_host.endswith(".") else ascii_host.split(".")
    if len(ascii_host) > 253 or not all(_HOST_LABEL.fullmatch(label) for label in labels):
        raise ConfigError(
            f"bad host {host!r} in the database URL: use a host name (labels of 1-63 letters, "
            "digits, '-' or '_', joined by single dots) or an IP address"
        )
    return host


def _port(text: str | None, url: DatabaseURL) -> int | None:
    if not text:
        return None
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        hint = f"; {PERCENT_ENCODE_HINT}" if url.user or url.password else ""
        raise ConfigError(f"bad port {text!r} in {url}: use a number from 1 to 65535{hint}")
    return int(text)


def _options(dialect: str, query: str, url: DatabaseURL) -> dict[str, str]:
    """The URL's options, checked now rather than when the driver trips on them."""
    try:
        options = dict(parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query)))
    except ValueError:
        raise ConfigError(f"bad options in the URL of {url}: use ?name=value&name=value") from None
    if dialect == "mysql":
        unknown = sorted(set(options) - set(MYSQL_URL_OPTIONS))
        if unknown:
            raise ConfigError(
                f"unknown option {unknown[0]!r} in the URL of {url}: "
                f"MySQL/MariaDB URLs take {', '.join(MYSQL_URL_OPTIONS)}"
            )
    timeout = options.get("connect_timeout")
    low, high = CONNECT_TIMEOUT_RANGE[dialect]
    if timeout is not None and not (timeout.isdigit() and low <= int(timeout) <= high):
        raise ConfigError(
            f"bad connect_timeout {timeout!r} in the URL of {url}: use whole seconds from {low} to {high}"
        )
    skip_locked = options.get("skip_locked", "auto")
    if skip_locked not in SKIP_LOCKED_CHOICES:
        raise ConfigError(
            f"bad skip_locked {skip_locked!r} in the URL of {url}: use auto (SKIP LOCKED where the server "
            "has it) or off (claimers wait for each other, as on servers without it)"
        )
    _check_liveness(options, url)
    if dialect == "postgresql":
        _check_postgresql_options(options, url)
    mode = options.get("sslmode")
    if mode is not None and mode not in _SSL_MODES[dialect]:
        raise ConfigError(
            f"bad sslmode {mode!r} in the database URL: use one of {', '.join(_SSL_MODES[dialect])}"
        )
    return options


def _check_liveness(options: dict[str, str], url: DatabaseURL) -> None:
    liveness = options.get("liveness", "session")
    if liveness not in LIVENESS_CHOICES:
        raise ConfigError(
            f"bad liveness {liveness!r} in the URL of {url}: use session (a lock the worker's session "
            "holds) or lease (a row the worker renews: for clusters and poolers)"
        )
    if "lease" in options:
        low, high = LEASE_RANGE_SECONDS
        seconds = parse_duration(options["lease"], "lease in the URL")
        if not low <= seconds <= high:
            raise ConfigError(
                f"bad lease {options['lease']!r} in the URL of {url}: use 3s to 1d, e.g. lease=30s"
            )


def lease_seconds(url: DatabaseURL) -> float | None:
    """How long a worker's lease lasts, when the URL asks for lease liveness or goes through
    PgBouncer in transaction mode (no session is the worker's own there); None otherwise."""
    if url.options.get("liveness") != "lease" and url.options.get("pgbouncer") != "transaction":
        return None
    return lease_length(url)


def lease_length(url: DatabaseURL) -> float:
    """The URL's lease= in seconds (DEFAULT_LEASE_SECONDS without one), whoever asks for leases."""
    return parse_duration(url.options.get("lease", DEFAULT_LEASE_SECONDS), "lease in the URL")


def driver_options(url: DatabaseURL) -> dict[str, str]:
    """The URL's options meant for the driver (libpq), without batchq's own."""
    ours = (*BATCHQ_URL_OPTIONS, *POSTGRESQL_BATCHQ_OPTIONS)
    return {name: value for name, value in url.options.items() if name not in ours}


def _check_postgresql_options(options: dict[str, str], url: DatabaseURL) -> None:
    pooler = options.get("pgbouncer")
    if pooler is not None and pooler not in PGBOUNCER_CHOICES:
        raise ConfigError(
            f"bad pgbouncer {pooler!r} in the URL of {url}: use transaction (PgBouncer's pool_mode="
            "transaction: no session state, lease liveness, polling) or session (pool_mode=session)"
        )
    attrs = options.get("target_session_attrs")
    if attrs is not None and attrs not in TARGET_SESSION_ATTRS:
        raise ConfigError(
            f"bad target_session_attrs {attrs!r} in the URL of {url}: use one of "
            f"{', '.join(TARGET_SESSION_ATTRS)} (read-write: the primary of a failover pair)"
        )
    if pooler == "transaction" and options.get("liveness") == "session":
        raise ConfigError(
            f"liveness=session cannot work through PgBouncer in transaction mode ({url}): a session "
            "lock would stay on a pooled server session; leave liveness out (a lease is used)"
        )


def redact(text: str, url: DatabaseURL) -> str:
    """Mask the URL's password where a driver's message echoes it, and nowhere else.

    The URL as batchq prints it (already masked by position) is left whole; elsewhere only
    whole occurrences of the password (raw or percent-encoded) are masked, not its letters
    inside other words, so a short password cannot garble the message.
    """
    if not url.password:
        return text
    forms = sorted({url.password, quote(url.password, safe="")}, key=len, reverse=True)
    echo = re.compile(r"(?<![A-Za-z0-9_])(?:" + "|".join(map(re.escape, forms)) + r")(?![A-Za-z0-9_])")
    return str(url).join(echo.sub("***", piece) for piece in text.split(str(url)))


def format_time(value: datetime | str | None) -> str:
    """A time as batchq prints it (UTC); a value that is not a time (a row written by hand) as
    stored."""
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S UTC")
    if value is None:
        return "an unknown time"
    return repr(value)


def parse_utc_time(value: str, what: str) -> datetime:
    """An ISO 8601 time (``2026-11-27T12:19:20.123456+00:00``; without an offset: UTC), aware."""
    try:
        when = datetime.fromisoformat(value.strip())
    except ValueError:
        raise ConfigError(
            f"bad {what} {_brief(value)}: give an ISO 8601 time such as 2026-11-27T12:19:20+00:00"
        ) from None
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """A count with its noun in the right number: 1 job, 2 jobs, 0 jobs (plural: when not +s)."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def format_duration(seconds: float) -> str:
    """A duration as people read it: 45s, 3m12s, 2h05m, 3d04h (never negative)."""
    whole = max(0, int(seconds))
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    if whole < 86400:
        return f"{whole // 3600}h{whole % 3600 // 60:02d}m"
    return f"{whole // 86400}d{whole % 86400 // 3600:02d}h"


def parse_when(value: Duration | datetime | None, what: str = "delay") -> tuple[float, float | None]:
    """A delay as (seconds, None), or an aware datetime as (0, its Unix seconds): the one reading
    of a job's and a message's ``delay``. The SQL keeps the later of that time and the server's
    now, so a time in the past means now; a naive datetime is refused (aware_epoch)."""
    if isinstance(value, datetime):
        return 0.0, aware_epoch(value, what)
    return parse_duration(value, what), None


def aware_epoch(value: datetime | None, what: str) -> float | None:
    """An aware datetime as Unix seconds; a naive one is refused (whose clock would it be?)."""
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise ConfigError(f"bad {what} {value!r}: use an aware datetime, as datetime.now(timezone.utc)")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ConfigError(
            f"bad {what}: a naive datetime has no time zone (whose clock would it be?); give one, as "
            "datetime(..., tzinfo=timezone.utc) or datetime.now(timezone.utc)"
        )
    return value.timestamp()


def parse_duration(value: Duration | None, what: str = "duration") -> float:
    """Seconds from 90, 2.5, '90', '90s', '15m', '1h30m', '2d', '250ms' or a timedelta; None is 0.

    The one parser of durations: job delays, message delays and visibility timeouts, and the
    CLI's options. ``what`` names the value in the error.
    """
    if value is None:
        return 0.0
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, (int, float, Decimal)) and not isinstance(value, bool):
        seconds = _float(value)
    elif isinstance(value, str):
        seconds = _duration_text(value, what)
    else:
        raise ConfigError(
            f"bad {what} {_brief(value)}: a duration is seconds, a timedelta or text as in 90s, 15m"
        )
    if math.isnan(seconds) or seconds < 0:
        raise ConfigError(f"bad {what} {_brief(value)}: a duration is a number of seconds, 0 or more")
    if seconds > MAX_DURATION_SECONDS:
        raise ConfigError(
            f"bad {what} {_brief(value)}: a duration is at most 100 years ({MAX_DURATION_SECONDS:,} seconds)"
        )
    return seconds or 0.0  # never -0.0


def parse_timeout(value: Duration | None, what: str = "timeout") -> float | None:
    """Seconds a job may run, as parse_duration reads them, but more than 0; None stays None
    (no timeout given: the next default applies)."""
    if value is None:
        return None
    seconds = parse_duration(value, what)
    if seconds <= 0:
        raise ConfigError(
            f"bad {what} {_brief(value)}: a timeout is more than 0 seconds (leave it out for none)"
        )
    return seconds


def _brief(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _float(value: int | float | Decimal) -> float:
    try:
        return float(value)
    except OverflowError:  # an int beyond any float: beyond the maximum too
        return math.inf


def _duration_text(value: str, what: str) -> float:
    text = value.strip()
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    pieces = _DURATION.findall(text)
    if not pieces or _DURATION.sub("", text).strip():
        raise ConfigError(
            f"bad {what} {_brief(value)}: a duration is seconds or units, as in 90s, 15m, 1h30m, 2d"
        )
    return sum(float(n) * _UNIT_SECONDS[unit.lower()] for n, unit in pieces)


def check_queue_name(name: str) -> str:
    if not isinstance(name, str) or not QUEUE_NAME.fullmatch(name):
        raise ConfigError(
            f"bad queue name {name!r}: use 1-64 letters, digits, '_', '-', '.', ':', "
            "starting with a letter or digit"
        )
    return name


def existing_queue_name(name: str, exists: Callable[[str], bool]) -> str:
    """A queue name for a clean-up path (purge, cancel, drop): today's rules, or else any text
    a queue of that name in the tables has (``exists``), written by plain SQL, so that batchq,
    not only SQL, can clear it. A name that is neither raises check_queue_name's error."""
    try:
        return check_queue_name(name)
    except ConfigError:
        if isinstance(name, str) and name and "\x00" not in name and _encodable(name) and exists(name):
            return name
        raise


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
