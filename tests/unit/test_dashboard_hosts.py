"""The Host header rules of batchq.dashboard.hosts, case by case (the subprocess tests in
tests/acceptance/test_dashboard_hosts.py check them over HTTP)."""

from __future__ import annotations

import pytest

from batchq.dashboard.hosts import HostPolicy

LOOPBACK = HostPolicy.for_listener("127.0.0.1", ["127.0.0.1"])
NAMED = HostPolicy.for_listener("localhost", ["127.0.0.1", "::1"], ("dash.example.com",))
EVERYWHERE = HostPolicy.for_listener("0.0.0.0", ["0.0.0.0"], ("dash.example.com",))
IPV6 = HostPolicy.for_listener("[::1]", ["::1"])


@pytest.mark.parametrize(
    ("policy", "header", "status"),
    [
        (LOOPBACK, None, None),  # HTTP/1.0: no browser
        (LOOPBACK, "", None),
        (LOOPBACK, "127.0.0.1:8080", None),
        (LOOPBACK, "localhost", None),
        (LOOPBACK, "LOCALHOST.:8080", None),
        (LOOPBACK, "localhost:", None),  # an empty port is allowed by RFC 3986
        (LOOPBACK, "attacker.example:8080", 421),
        (LOOPBACK, "attacker.example.", 421),
        (LOOPBACK, "127.0.0.1.nip.io", 421),
        (LOOPBACK, "127.1", 421),  # not the canonical form a browser sends
        (LOOPBACK, "[::1]:8080", 421),  # not an address it listens on
        (LOOPBACK, "localhost..", 400),
        (LOOPBACK, "[::1", 400),
        (LOOPBACK, "::1", 400),  # an IPv6 literal needs its brackets
        (LOOPBACK, "localhost:65536", 400),
        (LOOPBACK, "localhost:8080, attacker.example", 400),  # two Host headers joined
        (LOOPBACK, "local host", 400),
        (NAMED, "[::1]", None),
        (NAMED, "Dash.Example.COM.:443", None),
        (NAMED, "sub.dash.example.com", 421),
        (EVERYWHERE, "10.1.2.3:8080", None),  # an IP literal: no DNS answer to re-point
        (EVERYWHERE, "[2001:db8::1]", None),
        (EVERYWHERE, "localhost", None),
        (EVERYWHERE, "dash.example.com", None),
        (EVERYWHERE, "attacker.example", 421),
        (IPV6, "[0:0:0:0:0:0:0:1]:8080", None),
        (IPV6, "localhost", None),
        (IPV6, "127.0.0.1", 421),
    ],
)
def test_host_header(policy: HostPolicy, header: str | None, status: int | None) -> None:
    refused = policy.refusal(header)
    assert (refused[0] if refused else None) == status, refused
