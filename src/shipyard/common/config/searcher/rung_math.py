"""The arithmetic of rungs and brackets that both a config rule and a searcher need: a
rule checks that a plan is possible, the searcher runs the same plan.

Exact for an integral divisor (ints, no float off-by-one); `exact` turns the config's 4.0
into 4 before any of it runs."""

from __future__ import annotations

import math

Divisor = int | float


def exact(divisor: float) -> Divisor:
    """An integral divisor as an int, so that rung lengths are computed exactly."""
    return int(divisor) if float(divisor).is_integer() else float(divisor)


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


def ceil_ratio(numerator: int, power_of: Divisor, exponent: int, denominator: int) -> int:
    """ceil(numerator * power_of**exponent / denominator), exact for an int divisor."""
    if isinstance(power_of, int):
        return -(-numerator * power_of**exponent // denominator)
    return math.ceil(numerator * power_of**exponent / denominator)


def hyperband_brackets(length: int, eta: Divisor, max_rungs: int) -> list[tuple[int, int]]:
    """(s, trials) of each Hyperband bracket, the deepest first: s_max = min(max_rungs - 1,
    floor(log_eta length)), n_s = ceil((s_max + 1) / (s + 1) * eta**s)."""
    s_max = min(max_rungs - 1, floor_log(length, eta))
    return [(s, ceil_ratio(s_max + 1, eta, s, s + 1)) for s in range(s_max, -1, -1)]


def rungs_for_mode(mode: str, max_rungs: int) -> list[int]:
    """adaptive_asha's bracket depths for a mode (Determined's split)."""
    if mode == "aggressive":
        return [max_rungs]
    if mode == "conservative":
        return list(range(1, max_rungs + 1))
    return list(range((max_rungs - 1) // 2 + 1, max_rungs + 1))


def adaptive_rungs(
    length: int,
    divisor: Divisor,
    max_trials: int,
    mode: str,
    max_rungs: int,
    bracket_rungs: list[int],
) -> list[int]:
    """The rungs of each adaptive_asha bracket, most first: bracket_rungs when given, else
    those of the mode over m = min(max_rungs, floor(log length) + 1, floor(log max_trials) + 1)."""
    if bracket_rungs:
        rungs = list(bracket_rungs)
    else:
        m = min(max_rungs, floor_log(length, divisor) + 1, floor_log(max_trials, divisor) + 1)
        rungs = rungs_for_mode(mode, m)
    return sorted(rungs, reverse=True)


def split_trials(max_trials: int, divisor: Divisor, rungs: list[int]) -> list[int]:
    """Bracket i gets max(int(w_i / sum(w) * max_trials), 1), w_i = divisor**(r_i - 1) / r_i,
    and bracket 0 the remainder (below 1 when max_trials is too small for the brackets)."""
    weights = [divisor ** (r - 1) / r for r in rungs]
    total = sum(weights)
    trials = [max(int(w / total * max_trials), 1) for w in weights]
    trials[0] += max_trials - sum(trials)
    return trials
