"""What the successive-halving searchers (async_halving, adaptive_asha, hyperband) share:
reading their extra config fields, rung arithmetic, and reading one validation.

Kept apart so each algorithm module holds only its decision rules, and so the config checks
(divisor, reachable rungs) give the same message whichever searcher a user picked.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Any

from shipyard.common.errors import ConfigError
from shipyard.search.options import SearcherOptions

# The score of a trial that has no usable value (NaN, inf, missing, errored, canceled).
# Not float("inf"): the state goes to a JSON column, and PostgreSQL refuses Infinity.
WORST = sys.float_info.max

Divisor = int | float


def config_error(field: str, message: str) -> ConfigError:
    path = f"searcher.{field}"
    return ConfigError(f"{path}: {message}", details=[{"path": path, "message": message}])


def fmt(value: float) -> str:
    """A number as a user wrote it: 4 not 4.0, 2.5 as 2.5, 0.15625 as 0.16."""
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.2g}" if abs(value) < 1 else f"{value:g}"


# --- config fields ----------------------------------------------------------------------------


def read_int(section: dict[str, Any], field: str, default: int | None = None) -> int:
    """A positive integer field; a missing (or null) field takes `default`, or is an error."""
    value = section.get(field)
    if value is None and default is not None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise config_error(field, f"expected a positive integer, got {value!r}")
    return value


def read_divisor(section: dict[str, Any], default: int) -> Divisor:
    """divisor: a number >= 2 (an integral float becomes an int, so rung math stays exact)."""
    value = section.get("divisor")
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise config_error("divisor", f"expected a number, got {value!r}")
    if value < 2:
        raise config_error("divisor", f"must be at least 2, got {fmt(value)}")
    return int(value) if float(value).is_integer() else float(value)


def read_choice(section: dict[str, Any], field: str, choices: tuple[str, ...]) -> str:
    value = section.get(field)
    if value is None:
        return choices[0]
    if value not in choices:
        raise config_error(field, f"expected one of {', '.join(choices)}, got {value!r}")
    return str(value)


def length_field(options: SearcherOptions) -> str:
    """The config field the length comes from, for error messages."""
    return "max_time" if options.time_metric else "max_length"


def unit_of(options: SearcherOptions) -> str:
    """The searcher's time unit in words: its time_metric, max_length's unit, or steps."""
    return options.time_metric or options.max_length_unit or "steps"


# --- rung arithmetic --------------------------------------------------------------------------


def scaled_down(value: int, divisor: Divisor, power: int) -> int:
    """floor(value / divisor**power), exact for an integral divisor (no float off-by-one)."""
    if isinstance(divisor, int):
        return value // divisor**power
    return int(value / divisor**power)


def floor_log(value: int, base: Divisor) -> int:
    """The largest k with base**k <= value (0 when value < base); exact for an int base."""
    k = 0
    while base ** (k + 1) <= value:
        k += 1
    return k


def rung_lengths(length: int, divisor: Divisor, num_rungs: int) -> list[int]:
    """Determined's ASHA rungs: rung i needs length / divisor**(num_rungs - i - 1), at least 1;
    the top rung is the full length."""
    return [max(scaled_down(length, divisor, num_rungs - i - 1), 1) for i in range(num_rungs)]


def check_reachable(options: SearcherOptions, divisor: Divisor, num_rungs: int) -> int:
    """The full length, after checking that num_rungs distinct rungs fit in it: a first rung
    shorter than one unit would make the lower rungs all the same length."""
    length = options.require_length()
    if floor_log(length, divisor) >= num_rungs - 1:
        return length
    field = length_field(options)
    try:
        needed = divisor ** (num_rungs - 1)
        hint = f"use {field} >= {math.ceil(needed)} or fewer rungs"
        first = fmt(length / needed)
    except OverflowError:  # a float divisor to a huge power
        hint, first = "use fewer rungs", "almost 0"
    raise config_error(
        field,
        f"{field} {length} is too short for {num_rungs} rungs with divisor {fmt(divisor)}: "
        f"the first rung would need {first} {unit_of(options)}; {hint}",
    )


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
