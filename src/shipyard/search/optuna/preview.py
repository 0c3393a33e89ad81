"""What an optuna search will run, without Optuna."""

from __future__ import annotations

from typing import Any

from shipyard.common.config.searcher import OptunaSearcher as OptunaConfig
from shipyard.common.config.searcher.optuna import AshaPruner
from shipyard.common.config.searcher.rung_math import exact
from shipyard.search.options import SearcherOptions
from shipyard.search.rungs import rung_lengths, unit_of

KIND = "optuna"


def preview_plan(config: OptunaConfig, space: dict[str, Any]) -> dict[str, Any]:
    """What an optuna search will run, without Optuna: max_trials trials; with pruner asha
    the expected trials per rung (max_trials / divisor**k) and their compute; otherwise
    every trial to the full length, the most it can cost (Optuna's pruners decide at run
    time, from the values the trials report)."""
    options = SearcherOptions.of(config)
    trials, length = config.max_trials, options.length
    pruner = config.pruner
    note: str | None = None
    if length is None:
        unit, compute, random_compute = "trials", float(trials), float(trials)
        brackets: list[dict[str, Any]] = []
    elif isinstance(pruner, AshaPruner):
        unit, random_compute = unit_of(options), float(trials * length)
        divisor = exact(pruner.divisor)
        lengths = rung_lengths(length, divisor, pruner.num_rungs)
        reaching = [max(int(trials / divisor**k), 1) for k in range(len(lengths))]
        compute = float(
            sum(
                n * (end - start)
                for n, start, end in zip(reaching, [0, *lengths[:-1]], lengths, strict=True)
            )
        )
        rungs = [
            {"rung": k, "trials": n, "length": end}
            for k, (n, end) in enumerate(zip(reaching, lengths, strict=True))
        ]
        brackets = [{"bracket": 0, "trials": trials, "rungs": rungs, "compute": compute}]
    else:
        unit, compute = unit_of(options), float(trials * length)
        random_compute = compute
        rungs = [{"rung": 0, "trials": trials, "length": length}]
        brackets = [{"bracket": 0, "trials": trials, "rungs": rungs, "compute": compute}]
        if pruner.name != "none":
            note = (
                f"Optuna's {pruner.name} pruner decides at run time which trials stop early: "
                "the compute shown is the most, every trial trained to the full length"
            )
    return {
        "searcher": KIND,
        "unit": unit,
        "brackets": brackets,
        "total_trials": trials,
        "compute": compute,
        "random_search_compute": random_compute,
        "ratio": compute / random_compute,
        "note": note,
    }
