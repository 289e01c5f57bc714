"""The loopback ``Host`` check the collector and the UI make (DNS rebinding): exact names and addresses only."""

from __future__ import annotations

import pytest

from toolpath.hosts import is_loopback_host


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
