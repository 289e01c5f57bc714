"""The SDK methods an adapter has replaced with traced wrappers, and how to put them back.

An adapter that traces an SDK by wrapping some of its classes' methods (:mod:`toolpath.adapters.mcp`,
:mod:`toolpath.adapters.a2a`) keeps one :class:`MethodPatches`: it patches all of them or none (a method missing
from the installed SDK undoes those already patched and raises :class:`~toolpath.errors.ConfigError`), and
:meth:`MethodPatches.restore` puts the SDK's own methods back.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from toolpath.errors import ConfigError

__all__ = ["MethodPatches"]

Wrap = Callable[[Callable[..., Any]], Callable[..., Any]]


class MethodPatches:
    """The methods one adapter (``adapter``, e.g. ``"mcp"``) has wrapped in ``sdk`` (e.g. ``"the mcp SDK 1.x"``)."""

    def __init__(self, adapter: str, sdk: str) -> None:
        self._adapter = adapter
        self._sdk = sdk
        self._lock = threading.Lock()
        self._originals: dict[tuple[type, str], Callable[..., Any]] = {}

    def __bool__(self) -> bool:
        return bool(self._originals)

    @contextmanager
    def installing(self) -> Iterator[bool]:
        """Hold the lock while the adapter patches; yields whether its methods are patched already."""
        with self._lock:
            yield bool(self._originals)

    def patch(self, owner: type, name: str, make: Wrap) -> None:
        """Replace ``owner.name`` with ``make(original)`` (call inside :meth:`installing`)."""
        original = owner.__dict__.get(name)
        if original is None:  # another major version of the SDK: say so rather than trace half of it
            self._put_back()
            raise ConfigError(
                f"toolpath.adapters.{self._adapter} supports {self._sdk}: {owner.__qualname__}.{name} is not there"
            )
        self._originals[owner, name] = original
        wrapper = make(original)
        functools.update_wrapper(wrapper, original)
        setattr(owner, name, wrapper)

    def restore(self) -> None:
        """Put the SDK's own methods back."""
        with self._lock:
            self._put_back()

    def _put_back(self) -> None:
        for (owner, name), original in self._originals.items():
            setattr(owner, name, original)
        self._originals.clear()
