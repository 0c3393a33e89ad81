"""What the successive-halving searchers (async_halving, adaptive_asha, hyperband) share:
rung lengths, units in words, and reading one validation.

Kept apart so each algorithm module holds only its decision rules. Their config is checked
once, by the models of common/config/searcher (rung_math there).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from shipyard.common.config.searcher.rung_math import Divisor, scaled_down
from shipyard.search.options import SearcherOptions

# The score of a trial that has no usable value (NaN, inf, missing, errored, canceled).
# Not float("inf"): the state goes to a JSON column, and PostgreSQL refuses Infinity.
WORST = sys.float_info.max


def fmt(value: float) -> str:
    """A number as a user wrote it: 4 not 4.0, 2.5 as 2.5, 0.15625 as 0.16."""
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.2g}" if abs(value) < 1 else f"{value:g}"


# --- units ------------------------------------------------------------------------------------


def unit_of(options: SearcherOptions) -> str:
    """The searcher's time unit in words: its time_metric, max_length's unit, or steps."""
    return options.time_metric or options.max_length_unit or "steps"


# --- rung arithmetic --------------------------------------------------------------------------


def rung_lengths(length: int, divisor: Divisor, num_rungs: int) -> list[int]:
    """Determined's ASHA rungs: rung i needs length / divisor**(num_rungs - i - 1), at least 1;
    the top rung is the full length."""
    return [max(scaled_down(length, divisor, num_rungs - i - 1), 1) for i in range(num_rungs)]


# --- one validation ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Reading:
    """One validation as a successive-halving searcher sees it.

    time None: the configured time_metric is missing (the trial must be stopped, with
    `missing_time` as the reason). score: a loss, WORST when unusable (`note` says why)."""

    time: float | None
    score: float
    note: str | None = None
    missing_time: str | None = None


def read_validation(
    options: SearcherOptions, metrics: dict[str, Any], steps_completed: int
) -> Reading:
    time = options.time_of(metrics, steps_completed)
    if time is None:
        name = options.time_metric
        have = (
            f"have {name}={metrics[name]!r}, not a finite number"
            if name in metrics
            else f"have no {name!r}"
        )
        reason = (
            f"its validation metrics {have}, the searcher's time_metric: "
            "report it with every validation"
        )
        return Reading(time=None, score=WORST, missing_time=reason)
    score = options.score_of(metrics)
    if score is not None:
        return Reading(time=time, score=score)
    metric = options.metric
    got = f"reported {metrics[metric]!r} for" if metric in metrics else "reported no"
    return Reading(
        time=time,
        score=WORST,
        note=f"{got} {metric!r} at time {fmt(time)}: counted as the worst value",
    )


def exit_note(reason: str, rung: int, length: int) -> str:
    return f"{reason.lower()} at rung {rung} before length {length}: counted as the worst value"
