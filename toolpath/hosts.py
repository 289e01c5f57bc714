"""Whether a request's ``Host`` header names this machine's loopback interface (the DNS-rebinding check of the
collector and the UI when they listen on loopback)."""

from __future__ import annotations

import ipaddress
import re

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "[::1]", "::1"})
_HOST = re.compile(r"(?P<name>\[[0-9A-Fa-f:.]{2,45}\]|[A-Za-z0-9.-]{1,253})(?::[0-9]{1,5})?")
"""A ``Host`` header as RFC 9110 allows it: a name, an IPv4 address or a bracketed IPv6 one, and a port."""


def is_loopback_host(host: str) -> bool:
    """Whether ``host`` (a ``Host`` header) is exactly a loopback name or address with an optional port:
    ``127.0.0.1:8765@evil.test`` or ``localhost.evil.test`` are not."""
    match = _HOST.fullmatch(host)
    if match is None:
        return False
    name = match.group("name").lower()
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name.strip("[]")).is_loopback
    except ValueError:
        return False
