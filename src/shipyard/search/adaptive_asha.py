"""adaptive_asha: Determined's adaptive ASHA, several async_halving brackets side by side.

One bracket with many rungs stops trials early and hard; if early scores mislead (curves
that cross), fewer rungs are safer. Not knowing which holds, adaptive ASHA runs brackets of
different depths at once (the `mode` picks how many), giving more trials to the deeper,
cheaper-per-trial brackets. Each bracket is an asha.AshaBracket over its share of max_trials
and of max_concurrent_trials; request ids and points come from one counter over all brackets.

Determined's split, kept as is:
- without bracket_rungs: m = min(max_rungs, floor(log_divisor(length)) + 1,
  floor(log_divisor(max_trials)) + 1) (the logs computed exactly, see rungs.floor_log);
  aggressive: [m], standard: [(m - 1) // 2 + 1 .. m], conservative: [1 .. m];
- brackets sorted by rungs, most first (more early stopping first);
- bracket i gets max(int(w_i / sum(w) * max_trials), 1) trials, w_i = divisor**(r_i - 1) / r_i,
  and bracket 0 the remainder;
- max_concurrent_trials 0: each bracket starts max(trials of the last bracket, int(divisor));
  else max(max_concurrent_trials, number of brackets) split evenly, the remainder to the
  first brackets.

stop_once is accepted whatever its value: this implementation is always the stopping
variant (a trial not in the top 1/divisor of a rung is stopped when it reaches the rung,
never promoted later), as Determined's current adaptive_asha is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shipyard.search.asha import AshaBracket, AshaSearcher
from shipyard.search.options import SearcherOptions
from shipyard.search.rungs import (
    Divisor,
    check_reachable,
    config_error,
    floor_log,
    read_choice,
    read_divisor,
    read_int,
)

MODES = ("standard", "aggressive", "conservative")


@dataclass(frozen=True)
class BracketPlan:
    num_rungs: int
    max_trials: int
    max_concurrent_trials: int


def rungs_for_mode(mode: str, max_rungs: int) -> list[int]:
    if mode == "aggressive":
        return [max_rungs]
    if mode == "conservative":
        return list(range(1, max_rungs + 1))
    return list(range((max_rungs - 1) // 2 + 1, max_rungs + 1))


def split_trials(max_trials: int, divisor: Divisor, rungs: list[int]) -> list[int]:
    weights = [divisor ** (r - 1) / r for r in rungs]
    total = sum(weights)
    trials = [max(int(w / total * max_trials), 1) for w in weights]
    trials[0] += max_trials - sum(trials)
    if trials[0] < 1:
        raise config_error(
            "max_trials",
            f"{max_trials} trials are too few for the brackets {rungs}: "
            "raise max_trials or list fewer bracket_rungs",
        )
    return trials


def split_concurrency(max_concurrent_trials: int, divisor: Divisor, trials: list[int]) -> list[int]:
    n = len(trials)
    if max_concurrent_trials == 0:
        return [max(trials[-1], int(divisor))] * n
    total = max(max_concurrent_trials, n)
    return [total // n + (1 if i < total % n else 0) for i in range(n)]


def _explicit_rungs(section: dict[str, Any]) -> list[int]:
    value = section.get("bracket_rungs")
    if value is None:
        return []
    if not isinstance(value, list) or not all(
        isinstance(r, int) and not isinstance(r, bool) and r >= 1 for r in value
    ):
        raise config_error("bracket_rungs", f"expected a list of positive integers, got {value!r}")
    return list(value)


def plan_brackets(section: dict[str, Any], options: SearcherOptions) -> list[BracketPlan]:
    """The brackets of an adaptive_asha config; ConfigError for bad or unreachable fields."""
    max_trials = options.require_max_trials()
    divisor = read_divisor(section, default=4)
    mode = read_choice(section, "mode", MODES)
    max_rungs = read_int(section, "max_rungs", default=5)
    rungs = _explicit_rungs(section)
    if rungs:
        check_reachable(options, divisor, max(rungs))
    else:
        length = options.require_length()
        m = min(max_rungs, floor_log(length, divisor) + 1, floor_log(max_trials, divisor) + 1)
        rungs = rungs_for_mode(mode, m)
    rungs.sort(reverse=True)
    trials = split_trials(max_trials, divisor, rungs)
    concurrency = split_concurrency(options.max_concurrent_trials, divisor, trials)
    return [BracketPlan(*plan) for plan in zip(rungs, trials, concurrency, strict=True)]


class AdaptiveAshaSearcher(AshaSearcher):
    kind = "adaptive_asha"

    def __init__(self, section: dict[str, Any], space: dict[str, Any], seed: int) -> None:
        options = SearcherOptions.from_dict(section)
        divisor = read_divisor(section, default=4)
        brackets = [
            AshaBracket(options, divisor, p.num_rungs, p.max_trials, p.max_concurrent_trials)
            for p in plan_brackets(section, options)
        ]
        super().__init__(options, space, seed, brackets)
