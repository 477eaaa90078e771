"""Which Host headers the dashboard answers: a defence against DNS rebinding.

Reading needs no token, so a page on attacker.example whose name the attacker re-points at
127.0.0.1 could make the operator's browser read a loopback-only dashboard (same origin, from
the browser's point of view). Such a request names the attacker's host in its Host header, so
the dashboard answers only the names it was started for:

- the --host it listens on (a name, or the addresses that name resolves to), and "localhost"
  when it listens on loopback (no one can re-point that name);
- each --allowed-host (the name a reverse proxy or the operator's browser uses);
- listening on every address (0.0.0.0, ::, *): any IP literal too. A browser sends an IP
  literal only for a URL written with that address, and no DNS answer is involved then.

The port in the Host header is not compared (a proxy may serve it on another), letters are
compared in lower case, a trailing dot names the same name, and IPv6 literals are compared as
addresses ("[::1]" and "[0:0::1]" alike). A request with no Host header (HTTP/1.0 tools) is
answered: every browser sends one.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from dataclasses import dataclass

from ..errors import ConfigError

WILDCARDS = ("*", "0.0.0.0", "::")
# A DNS name as a Host header carries it: labels of letters, digits, "-" and "_" (which some
# internal names use), dot-separated; or an IPv4 literal, which has the same shape.
_NAME = re.compile(r"[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*")
_HOST_HEADER = re.compile(r"(?P<host>\[[^\]]*\]|[^:\[\]]*)(:(?P<port>[0-9]{0,5}))?")


class BadHost(ValueError):
    """A Host header that is not a host[:port]."""


def normalise(name: str) -> str:
    """A host as compared: an IP address in its canonical form, else the name in lower case,
    without a trailing dot. ValueError if it is neither."""
    text = name.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
        return str(ipaddress.IPv6Address(text))  # brackets hold an IPv6 literal and nothing else
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        pass
    text = text.lower()
    text = text[:-1] if text.endswith(".") else text
    if len(text) > 253 or not _NAME.fullmatch(text):
        raise ValueError(f"not a host name or IP address: {name!r}")
    return text


def allowed_host_option(value: str) -> str:
    """An --allowed-host value, normalised; ConfigError naming the problem."""
    try:
        return normalise(value)
    except ValueError:
        raise ConfigError(
            f"bad --allowed-host {value!r}: give a host name or IP address as a browser's URL "
            "names it, without scheme, port or path (e.g. --allowed-host dashboard.example.com)"
        ) from None


def host_of_header(value: str) -> str:
    """The host a Host header names, normalised; BadHost if it is malformed."""
    match = _HOST_HEADER.fullmatch(value.strip())
    if match is None or (match["port"] and not 0 < int(match["port"]) < 65536):
        raise BadHost(value)
    try:
        return normalise(match["host"])
    except ValueError:
        raise BadHost(value) from None


def is_wildcard(host: str) -> bool:
    if host in WILDCARDS or host == "":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return False


def listen_addresses(host: str, port: int) -> list[str]:
    """The addresses waitress will listen on for ``host`` (it resolves it the same way).
    OSError (socket.gaierror) if the host is no address and no name that resolves."""
    target = None if host in ("*", "") else host.strip("[]")
    found = socket.getaddrinfo(target, port, 0, socket.SOCK_STREAM, socket.IPPROTO_TCP, socket.AI_PASSIVE)
    return list(dict.fromkeys(str(sockaddr[0]).split("%", 1)[0] for *_, sockaddr in found))


@dataclass(frozen=True)
class HostPolicy:
    """The hosts one dashboard answers (see the module's docstring)."""

    names: frozenset[str]
    any_ip_literal: bool

    @classmethod
    def for_listener(cls, host: str, addresses: list[str], allowed: tuple[str, ...] = ()) -> HostPolicy:
        names = set(allowed) | {normalise(address) for address in addresses}
        wildcard = is_wildcard(host)
        if not wildcard and _is_name(host):
            names.add(normalise(host))
        if wildcard or any(ipaddress.ip_address(address).is_loopback for address in addresses):
            names.add("localhost")
        return cls(frozenset(names), wildcard)

    def refusal(self, header: str | None) -> tuple[int, str] | None:
        """None if a request with this Host header is answered; else its status and why."""
        if not header:
            return None
        try:
            host = host_of_header(header)
        except BadHost:
            return 400, f"bad Host header {header!r}: expected host[:port]"
        if host in self.names or (self.any_ip_literal and _is_ip(host)):
            return None
        return 421, (
            f"this dashboard does not answer to the host {host!r} (the request's Host header): "
            "open it by the address it listens on, or start it with --allowed-host "
            f"{host} if that name is yours"
        )


def _is_name(host: str) -> bool:
    """Whether ``host`` is a name or address a Host header can carry (a name that resolves may
    hold characters none does: it is then reached by its addresses)."""
    try:
        normalise(host)
    except ValueError:
        return False
    return True


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
