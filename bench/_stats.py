"""Small summaries of timing samples, the same in every benchmark."""

from __future__ import annotations

import math
import statistics


def percentile(samples: list[float], fraction: float) -> float:
    """Nearest-rank percentile (fraction in 0..1) of a non-empty list."""
    ordered = sorted(samples)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def summary(samples: list[float], digits: int = 4) -> dict[str, object]:
    return {
        "median": round(statistics.median(samples), digits),
        "p90": round(percentile(samples, 0.9), digits),
        "min": round(min(samples), digits),
        "max": round(max(samples), digits),
        "samples": [round(sample, digits) for sample in samples],
    }
