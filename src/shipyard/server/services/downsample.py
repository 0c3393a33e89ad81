"""Reduce a metric series to the points a chart can draw, keeping its extremes.

Min/max per bucket rather than LTTB (DESIGN.md): a spike or a dip is what a person looks
for in a loss curve, and min/max keeps every one of them; it needs no dependency.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from operator import itemgetter

Point = tuple[int, float | None]  # (steps_completed, value); None: a non-finite value

_value = itemgetter(1)


def downsample(points: Sequence[Point], max_points: int) -> list[Point]:
    """At most max_points of `points` (sorted by step, one point a step), in step order:
    the first and the last, and the min and the max of each bucket of the step range
    between them. A bucket with only None values keeps one, so the gap stays visible."""
    if max_points < 2:
        raise ValueError(f"max_points must be at least 2, got {max_points}")
    if len(points) <= max_points:
        return list(points)
    first, last = points[0], points[-1]
    inner = points[1:-1]
    buckets = (max_points - 2) // 2  # each bucket gives at most two points
    if buckets == 0:
        return [first, last]
    steps = [p[0] for p in inner]
    low, span = first[0], last[0] - first[0]
    out = [first]
    start = 0
    for b in range(1, buckets + 1):
        # Bucket b holds the steps before low + span * b / buckets (the last takes the rest).
        end = len(inner) if b == buckets else bisect_left(steps, low + span * b / buckets)
        if end > start:
            out.extend(_extremes(inner[start:end]))
        start = end
    out.append(last)
    return out


def _extremes(bucket: Sequence[Point]) -> list[Point]:
    present = [p for p in bucket if p[1] is not None]
    if not present:
        return [bucket[0]]
    lowest, highest = min(present, key=_value), max(present, key=_value)
    if lowest is highest:
        return [lowest]
    return [lowest, highest] if lowest[0] < highest[0] else [highest, lowest]
