"""What a search will run, before it runs: for `shipyard preview-search`.

preview(searcher, space, seed) takes the validated searcher model and the normalized
space, and returns, JSON-able:

    {"searcher": name,
     "unit": time_metric, max_length's unit or "steps" ("trials" when the config sets no length),
     "brackets": [{"bracket": i, "trials": n,
                   "rungs": [{"rung": k, "trials": n_k, "length": units}], "compute": c}],
     "total_trials": n,
     "compute": c,                   # sum over brackets and rungs of
                                     #   n_k * (length_k - length_{k-1})
     "random_search_compute": c2,    # total_trials trials each trained to the full length
     "ratio": c / c2,
     "note"?: "..."}

n_k is how many trials train to rung k: for hyperband the plan's exact count; for
async_halving and adaptive_asha (asynchronous, so only an expectation) the bracket's trials
/ divisor**k, rounded down, at least 1; trials that exit early are not foreseen. single,
random and grid are one bracket of one rung (every trial to the full length).

pbt and optuna preview themselves: their package's preview_plan(searcher, space) returns
the same shape (optuna's without importing Optuna).
"""

from __future__ import annotations

from typing import Any

from shipyard.common.config.searcher import BaseSearcher, OptunaSearcher, PbtSearcher
from shipyard.search import optuna, pbt
from shipyard.search.asha import AshaSearcher
from shipyard.search.hyperband import HyperbandSearcher
from shipyard.search.population import PopulationSearcher
from shipyard.search.registry import make_searcher
from shipyard.search.rungs import scaled_down, unit_of

Rung = tuple[int, int | None]  # (trials, length)


def preview(config: BaseSearcher, space: dict[str, Any], seed: int) -> dict[str, Any]:
    if isinstance(config, PbtSearcher):
        return pbt.preview_plan(config, space)
    if isinstance(config, OptunaSearcher):
        return optuna.preview_plan(config, space)
    searcher = make_searcher(config, space, seed)
    brackets: list[list[Rung]]
    if isinstance(searcher, AshaSearcher):
        brackets = [
            [
                (max(scaled_down(b.max_trials, b.divisor, k), 1), units)
                for k, units in enumerate(b.lengths)
            ]
            for b in searcher.brackets
        ]
        options = searcher.options
    elif isinstance(searcher, HyperbandSearcher):
        brackets = [
            [(n, units) for n, units in zip(b.sizes, b.lengths, strict=True)]
            for b in searcher.brackets
        ]
        options = searcher.options
    else:
        assert isinstance(searcher, PopulationSearcher)
        options = searcher.options
        brackets = [[(searcher.total_trials, options.length)]]
    length = options.length
    plan = _plan(config.name, brackets, length)
    if length is None:
        plan["unit"] = "trials"
        plan["note"] = "the config sets no max_length or max_time: compute is counted in trials"
    else:
        plan["unit"] = unit_of(options)
    return plan


def _plan(name: str, brackets: list[list[Rung]], length: int | None) -> dict[str, Any]:
    out: list[dict[str, Any]] = []
    for i, rungs in enumerate(brackets):
        compute, previous = 0, 0
        for trials, units in rungs:
            step = units if units is not None else 1
            compute += trials * (step - previous)
            previous = step
        out.append(
            {
                "bracket": i,
                "trials": rungs[0][0],
                "rungs": [
                    {"rung": k, "trials": trials, "length": units}
                    for k, (trials, units) in enumerate(rungs)
                ],
                "compute": compute,
            }
        )
    total_trials = sum(b["trials"] for b in out)
    compute = sum(b["compute"] for b in out)
    random_compute = total_trials * (length if length is not None else 1)
    return {
        "searcher": name,
        "brackets": out,
        "total_trials": total_trials,
        "compute": compute,
        "random_search_compute": random_compute,
        "ratio": compute / random_compute,
    }
