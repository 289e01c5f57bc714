"""The loopback ``Host`` check the collector, the UI and the MCP server make (DNS rebinding): exact names and
addresses only, and for the UI and the MCP server the very port they serve."""

from __future__ import annotations

import pytest

from toolpath.hosts import HostCheck, check_served_host, host_refusal, is_loopback_host


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "127.0.0.1:8765", "localhost:4318", "LOCALHOST", "[::1]:80", "127.9.9.9"]
)
def test_loopback_hosts_pass(host):
    assert is_loopback_host(host)


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1:8765@evil.test",  # split on the last colon, this was 127.0.0.1
        "evil.test:8765",
        "localhost.evil.test",
        "127.0.0.1.evil.test",
        "127.0.0.1:80:80",
        "127.0.0.1 evil.test",
        "[::1]evil",
        "",
        "127.0.0.1:8765\n",
    ],
)
def test_anything_else_fails(host):
    assert not is_loopback_host(host)


@pytest.mark.parametrize(
    ("host", "port", "check"),
    [
        ("127.0.0.1:8765", 8765, HostCheck.SERVED),
        ("LOCALHOST:8765", 8765, HostCheck.SERVED),
        ("[::1]:8765", 8765, HostCheck.SERVED),
        ("127.0.0.1:8765", None, HostCheck.SERVED),  # no port known: the name alone
        ("127.0.0.1", 80, HostCheck.SERVED),  # no port: the scheme's
        ("127.0.0.1", 8765, HostCheck.ELSEWHERE),
        ("127.0.0.1:8766", 8765, HostCheck.ELSEWHERE),
        ("evil.test:8765", 8765, HostCheck.ELSEWHERE),
        ("127.0.0.1:8765@evil.test", 8765, HostCheck.MALFORMED),
        ("127.0.0.1:8765:8765", 8765, HostCheck.MALFORMED),
        ("", 8765, HostCheck.MALFORMED),
    ],
)
def test_a_served_host_is_a_loopback_name_and_the_port_served(host, port, check):
    assert check_served_host(host, port) is check


def test_the_refusals_of_a_host_are_400_and_421():
    assert host_refusal("127.0.0.1:8765@evil.test", ("127.0.0.1", 8765), "http") == (400, "bad Host header")
    assert host_refusal("127.0.0.1:8766", ("127.0.0.1", 8765), "http")[0] == 421
    assert host_refusal("127.0.0.1", ("127.0.0.1", 443), "https") is None
    assert host_refusal("127.0.0.1", ("127.0.0.1", 443), "http")[0] == 421
    assert host_refusal("localhost:1", None, "http") is None
