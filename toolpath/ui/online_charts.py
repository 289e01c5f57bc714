"""The online page's charts: the range shown cut into buckets (their size chosen from the range's length), and
each evaluator's metric laid out over every bucket of the range, traffic or not — its pass rate as bars when the
metric has a pass mark, else its mean score as a line on an axis from its values."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from toolpath.evaluation.verdicts import format_score
from toolpath.store.online_views import ScorePoint, Target
from toolpath.ui.views import ns_text

HOUR_NS = 3600 * 1_000_000_000
AUTO_BUCKETS = (
    (1, "hour"),
    (3, "3 hours"),
    (6, "6 hours"),
    (12, "12 hours"),
    (24, "day"),
    (72, "3 days"),
    (24 * 7, "week"),
)
"""The bucket sizes (in hours) the page picks from: the smallest that cuts the range in at most ``MOST_AUTO``."""
NAMED_BUCKETS = {"hour": 1, "day": 24}
"""The bucket sizes a ``bucket=`` parameter may ask for."""
MOST_AUTO, MOST_ASKED = 61, 400
"""At most 61 buckets chosen: 30 days in 12 hours, with a part of one at each end when the range is not aligned."""
LEFT, TOP, HEIGHT, WIDTH = 34, 6, 40, 600
"""The chart: the y axis's labels take the left; the plot ``HEIGHT`` high and about ``WIDTH`` wide."""


@dataclass(frozen=True)
class Buckets:
    """The range ``[since_ns, until_ns)`` cut into buckets of ``size_ns`` counted from the epoch (UTC)."""

    since_ns: int
    until_ns: int
    size_ns: int
    name: str

    @property
    def first(self) -> int:
        return self.since_ns // self.size_ns

    @property
    def count(self) -> int:
        return (self.until_ns - 1) // self.size_ns - self.first + 1


def buckets_for(since_ns: int, until_ns: int, asked: str | None) -> Buckets:
    """The buckets of the range: the size ``asked`` (``hour`` or ``day``), else the smallest of
    :data:`AUTO_BUCKETS` that makes at most :data:`MOST_AUTO`. ``ValueError`` names a size it does not know, or
    one that cuts the range in more than :data:`MOST_ASKED`."""
    if asked is not None:
        if asked not in NAMED_BUCKETS:
            raise ValueError(
                f"bucket={asked!r}: expected {' or '.join(NAMED_BUCKETS)} (or none: chosen from the range)"
            )
        chosen = Buckets(since_ns, until_ns, NAMED_BUCKETS[asked] * HOUR_NS, asked)
        if chosen.count > MOST_ASKED:
            raise ValueError(f"bucket={asked!r}: {chosen.count} buckets in the range, at most {MOST_ASKED}")
        return chosen
    for hours, name in AUTO_BUCKETS:
        chosen = Buckets(since_ns, until_ns, hours * HOUR_NS, name)
        if chosen.count <= MOST_AUTO:
            return chosen
    return chosen


def _rate(p: ScorePoint) -> float | None:
    return p.passed / (p.passed + p.failed) if p.passed + p.failed else None


def _marks(
    points: Sequence[ScorePoint], buckets: Buckets, step: float, rated: bool
) -> tuple[list[dict[str, Any]], list[str], str]:
    """The marks of each bucket with traffic (bars of pass rate, or points of the mean), the y axis's tick
    labels (top, middle, bottom) and, for means, the line's path from point to point."""
    marks: list[dict[str, Any]] = []
    if rated:
        for p in points:
            rate, x = _rate(p), LEFT + (p.start_ns // buckets.size_ns - buckets.first) * step
            height = max(round((rate or 0) * HEIGHT, 1), 1.0)
            marks.append({"point": p, "value": rate, "x": round(x, 1), "y": round(TOP + HEIGHT - height, 1),
                          "h": height, "when": ns_text(p.start_ns)})  # fmt: skip
        return marks, ["100%", "50%", "0%"], ""
    means = [p.mean for p in points if p.mean is not None]
    low, high = min([0.0, *means]), max([1.0, *means])
    path: list[str] = []
    for p in points:
        if p.mean is None:
            continue
        index = p.start_ns // buckets.size_ns - buckets.first
        x = round(LEFT + index * step + step / 2, 1)
        y = round(TOP + HEIGHT - (p.mean - low) / (high - low) * HEIGHT, 1)
        path.append(f"{'L' if path else 'M'}{x} {y}")  # through the buckets without traffic: none is not zero
        marks.append({"point": p, "value": p.mean, "x": x, "y": y, "when": ns_text(p.start_ns)})
    return marks, [format_score(high), format_score((high + low) / 2), format_score(low)], " ".join(path)


def charts(points: Sequence[ScorePoint], buckets: Buckets) -> list[dict[str, Any]]:
    """Per evaluator and metric: the overall figures (results, scored, errored, pass rate of those with a pass
    mark, mean of the scores) and its chart over every bucket of the range."""
    grouped: dict[tuple[str, str], list[ScorePoint]] = {}
    for point in points:
        grouped.setdefault((point.evaluator, point.metric), []).append(point)
    step = max(2.0, min(10.0, WIDTH / buckets.count))
    out = []
    for (evaluator, metric), series in sorted(grouped.items()):
        judged = sum(p.passed + p.failed for p in series)
        scored = sum(p.scored for p in series)
        total = sum(p.mean * p.scored for p in series if p.mean is not None)
        marks, ticks, path = _marks(series, buckets, step, rated=judged > 0)
        width = round(LEFT + buckets.count * step + 4)
        out.append(
            {
                "evaluator": evaluator,
                "target": series[0].target,
                "session": series[0].target is Target.SESSION,
                "metric": metric,
                "results": sum(p.results for p in series),
                "scored": scored,
                "errors": sum(p.errors for p in series),
                "pass_rate": sum(p.passed for p in series) / judged if judged else None,
                "mean": total / scored if scored else None,
                "kind": "rates" if judged else "means",
                "marks": marks,
                "ticks": ticks,
                "path": path,
                "bar": max(step - 2, 1.0),
                "chart_width": max(width, LEFT + 12 * 10 + 4),
                "first": ns_text(buckets.first * buckets.size_ns),
                "last": ns_text((buckets.first + buckets.count) * buckets.size_ns),
            }
        )
    return out
