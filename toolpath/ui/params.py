"""Query and form parameters of the UI's pages, checked: a bad value is a :class:`BadRequest` naming the
parameter (a 400 page), never a 500."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any
from urllib.parse import urlencode

from toolpath.errors import ToolpathError
from toolpath.evaluation.catalog import metric_info
from toolpath.store.annotations import REVIEW_LABELS
from toolpath.store.job_status import ResultLabel
from toolpath.store.session_filter import SessionFilter
from toolpath.store.session_order import TEXT_SORTS, SessionSort
from toolpath.store.turn_window import Window
from toolpath.tracer import semconv as sc


class BadRequest(ToolpathError, ValueError):
    """A parameter the page cannot use; the message says which and why."""


_TRUE = ("1", "on", "true", "yes")
_FALSE = ("", "0", "off", "false", "no")


def text(params: Mapping[str, str], name: str) -> str | None:
    """The parameter ``name`` stripped, ``None`` when empty. A NUL character is refused: no stored text holds one
    (the collector cleans them out) and PostgreSQL refuses any query that carries one."""
    value = params.get(name, "").strip()
    if "\x00" in value:
        raise BadRequest(f"{name}: holds a NUL character, which no stored text has")
    return value or None


def flag(params: Mapping[str, str], name: str) -> bool:
    value = params.get(name, "").strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise BadRequest(f"{name}={params.get(name)!r}: expected 1 or 0")


def number(params: Mapping[str, str], name: str, *, low: float = -math.inf, high: float = math.inf) -> float | None:
    raw = text(params, name)
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise BadRequest(f"{name}={raw!r}: not a number") from None
    if not math.isfinite(value) or not low <= value <= high:
        bounds = f" from {low:g} to {high:g}" if math.isfinite(low) else ""
        raise BadRequest(f"{name}={raw!r}: must be a finite number{bounds}")
    return value


def integer(params: Mapping[str, str], name: str, default: int, *, low: int, high: int) -> int:
    raw = text(params, name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadRequest(f"{name}={raw!r}: not a whole number") from None
    if not low <= value <= high:
        raise BadRequest(f"{name}={raw!r}: must be from {low} to {high}")
    return value


def timestamp_ns(params: Mapping[str, str], name: str) -> int | None:
    """A date or date and time (``2026-05-01``, ``2026-05-01T10:30``), UTC unless it says otherwise."""
    raw = text(params, name)
    if raw is None:
        return None
    try:
        when = datetime.fromisoformat(raw)
    except ValueError:
        raise BadRequest(f"{name}={raw!r}: not a date (e.g. 2026-05-01 or 2026-05-01T10:30)") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return int(when.timestamp() * 1_000_000) * 1000


class Preset(StrEnum):
    """The relative times a page's ``last`` parameter takes: the time up to now."""

    MINUTES_15 = "15m"
    HOUR = "1h"
    DAY = "24h"
    WEEK = "7d"

    @property
    def seconds(self) -> int:
        return {"15m": 900, "1h": 3600, "24h": 86400, "7d": 7 * 86400}[self.value]

    @property
    def label(self) -> str:
        return {"15m": "15 min", "1h": "1 h", "24h": "24 h", "7d": "7 d"}[self.value]


@dataclass(frozen=True)
class TimeRange:
    """The times a page shows (nanoseconds since the epoch, UTC; ``None``: unbounded), and the preset it was
    given as."""

    since_ns: int | None
    until_ns: int | None
    last: Preset | None = None


def time_range(params: Mapping[str, str], now_ns: int | None = None) -> TimeRange:
    """``last`` (a :class:`Preset`: the time up to now), or ``since`` and ``until`` (dates, UTC unless they say
    otherwise); not both."""
    raw = text(params, "last")
    since, until = timestamp_ns(params, "since"), timestamp_ns(params, "until")
    if raw is not None:
        try:
            last = Preset(raw)
        except ValueError:
            raise BadRequest(f"last={raw!r}: expected one of {', '.join(p.value for p in Preset)}") from None
        if since is not None or until is not None:
            raise BadRequest(f"last={raw!r}: is the time up to now; give it or since/until, not both")
        now = time.time_ns() if now_ns is None else now_ns
        return TimeRange(now - last.seconds * 1_000_000_000, None, last)
    if since is not None and until is not None and since > until:
        raise BadRequest("since is after until")
    return TimeRange(since, until)


def turn_window(params: Mapping[str, str]) -> tuple[Window, TimeRange]:
    """The turns a page of statistics counts: its :func:`time_range`, evaluations' own left out with
    ``hide_eval``."""
    times = time_range(params)
    hide = flag(params, "hide_eval")
    return Window(times.since_ns, times.until_ns, hide, sc.TOOLPATH_EVALUATION), times


def preset_links(path: str, params: Mapping[str, str], current: Preset | None) -> list[dict[str, Any]]:
    """The links of ``path`` to each preset and to all time, keeping ``params``' other filters (not the times,
    nor the place in the pages)."""
    keep = query_without(params, "last", "since", "until", "after", "before", "page")
    links = [
        {"label": p.label, "value": p.value, "url": f"{path}?{urlencode({**keep, 'last': p.value})}",
         "active": p is current}
        for p in Preset
    ]  # fmt: skip
    timed = current is not None or bool(params.get("since") or params.get("until"))
    return [*links, {"label": "all time", "value": "", "url": f"{path}?{urlencode(keep)}", "active": not timed}]


LABELS = (ResultLabel.PASS, ResultLabel.FAIL, ResultLabel.ERROR)
"""The labels of online results a filter can ask for."""
REVIEWS = (*REVIEW_LABELS, "any")
"""What a reviewer's annotations a filter can ask for: a label, or any annotation."""


def session_filter(params: Mapping[str, str]) -> SessionFilter:
    metric = text(params, "metric")
    below, worse = number(params, "below"), number(params, "worse")
    label = text(params, "label")
    for name, value in (("below", below), ("worse", worse), ("label", label)):
        if value is not None and metric is None:
            raise BadRequest(f"{name}: give the metric it applies to (metric=...)")
    if label is not None and label not in LABELS:
        raise BadRequest(f"label={label!r}: expected one of {', '.join(LABELS)}")
    review = text(params, "review")
    if review is not None and review not in REVIEWS:
        raise BadRequest(f"review={review!r}: expected one of {', '.join(REVIEWS)}")
    times = time_range(params)
    return SessionFilter(
        agent=text(params, "agent"),
        since_ns=times.since_ns,
        until_ns=times.until_ns,
        failures=flag(params, "failures"),
        metric=metric,
        below=below,
        worse_than=worse,
        lower_is_better=metric is not None and metric_info(metric).lower_is_better,
        label=None if label is None else ResultLabel(label),
        text=text(params, "q"),
        in_spans=flag(params, "in_spans"),
        tool=text(params, "tool"),
        tool_error=flag(params, "tool_error"),
        latency_above=number(params, "slower", low=0),
        hide_evaluation=flag(params, "hide_eval"),
        evaluation_attribute=sc.TOOLPATH_EVALUATION,
        review=review,
        user=text(params, "user"),
        tokens_above=None if text(params, "tokens") is None else integer(params, "tokens", 0, low=0, high=10**15),
    )


def cursor(params: Mapping[str, str], name: str = "after") -> tuple[int, str] | None:
    raw = text(params, name)
    if raw is None:
        return None
    at, sep, session_id = raw.partition(":")
    if not sep or not at.lstrip("-").isdigit() or not session_id:
        raise BadRequest(f"{name}={raw!r}: not a page cursor")
    return int(at), session_id


def cursor_text(value: tuple[int, str] | None) -> str | None:
    return f"{value[0]}:{value[1]}" if value is not None else None


def query_without(params: Mapping[str, Any], *names: str) -> dict[str, Any]:
    return {k: v for k, v in params.items() if k not in names and v not in (None, "")}


def session_sort(params: Mapping[str, str]) -> tuple[SessionSort, bool]:
    """The order of the sessions list (``sort``, ``order=asc|desc``): the column and whether descending; newest
    first unless asked otherwise."""
    raw = text(params, "sort") or SessionSort.TIME.value
    try:
        key = SessionSort(raw)
    except ValueError:
        raise BadRequest(f"sort={raw!r}: expected one of {', '.join(k.value for k in SessionSort)}") from None
    order = text(params, "order")
    if order is None:
        return key, key not in TEXT_SORTS
    if order not in ("asc", "desc"):
        raise BadRequest(f"order={order!r}: expected asc or desc")
    return key, order == "desc"
