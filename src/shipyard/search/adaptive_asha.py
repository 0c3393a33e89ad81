"""adaptive_asha: Determined's adaptive ASHA, several async_halving brackets side by side.

One bracket with many rungs stops trials early and hard; if early scores mislead (curves
that cross), fewer rungs are safer. Not knowing which holds, adaptive ASHA runs brackets of
different depths at once (the `mode` picks how many), giving more trials to the deeper,
cheaper-per-trial brackets. Each bracket is an asha.AshaBracket over its share of max_trials
and of max_concurrent_trials; request ids and points come from one counter over all brackets.

Determined's split, kept as is:
- without bracket_rungs: m = min(max_rungs, floor(log_divisor(length)) + 1,
  floor(log_divisor(max_trials)) + 1) (the logs computed exactly, see rung_math.floor_log);
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

from shipyard.common.config.searcher import AshaSearcher as AdaptiveAshaConfig
from shipyard.common.config.searcher.rung_math import Divisor, exact, split_trials
from shipyard.search.asha import AshaBracket, AshaSearcher
from shipyard.search.options import SearcherOptions


@dataclass(frozen=True)
class BracketPlan:
    num_rungs: int
    max_trials: int
    max_concurrent_trials: int


def split_concurrency(max_concurrent_trials: int, divisor: Divisor, trials: list[int]) -> list[int]:
    n = len(trials)
    if max_concurrent_trials == 0:
        return [max(trials[-1], int(divisor))] * n
    total = max(max_concurrent_trials, n)
    return [total // n + (1 if i < total % n else 0) for i in range(n)]


def plan_brackets(config: AdaptiveAshaConfig) -> list[BracketPlan]:
    """The brackets of an adaptive_asha config (the config model checked they can run)."""
    divisor = exact(config.divisor)
    rungs = config.bracket_plan()
    trials = split_trials(config.max_trials, divisor, rungs)
    concurrency = split_concurrency(config.max_concurrent_trials, divisor, trials)
    return [BracketPlan(*plan) for plan in zip(rungs, trials, concurrency, strict=True)]


class AdaptiveAshaSearcher(AshaSearcher):
    kind = "adaptive_asha"

    def __init__(self, config: AdaptiveAshaConfig, space: dict[str, Any], seed: int) -> None:
        options = SearcherOptions.of(config)
        divisor = exact(config.divisor)
        brackets = [
            AshaBracket(options, divisor, p.num_rungs, p.max_trials, p.max_concurrent_trials)
            for p in plan_brackets(config)
        ]
        super().__init__(options, space, seed, brackets)
