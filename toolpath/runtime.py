"""``toolpath.init``: tracing (:func:`toolpath.tracer.init`) plus, on request, online evaluation of what it stores."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from toolpath.errors import ConfigError
from toolpath.tracer import setup


def init(
    store: Any = None, *, online: str | Path | Mapping[str, Any] | Any | None = None, **options: Any
) -> setup.Tracing:
    """Set up tracing (see :func:`toolpath.tracer.init` for ``store`` and ``options``).

    ``online``: an ``online.toml`` path, a mapping with its keys, or an
    :class:`~toolpath.evaluators.online.OnlineConfig`: every invocation written to the store from now on that
    passes its filters and sample is scored by workers of their own, off the agent's threads.
    """
    tracing = setup.init(store, **options)
    if online is not None and tracing.online is None:
        if tracing.store is None:
            raise ConfigError("online evaluation needs a store (init(store=False) keeps none)")
        from toolpath.evaluators.online import OnlineEvaluator

        tracing.online = OnlineEvaluator(tracing.store, online).start()
    return tracing
