"""What a search will run, before it runs: for `shipyard preview-search`.

preview(searcher_dict, space, seed) checks the config (the same ConfigError as starting the
experiment would raise) and returns, JSON-able:

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

Other searchers (pbt, optuna) preview themselves: their module's preview_plan(searcher_dict,
space) returns the same shape. Without one the answer keeps the shape, empty (no brackets,
0 trials and compute, ratio None), with "note": "no preview for <name>".
"""

from __future__ import annotations

import importlib
from typing import Any

from shipyard.search.asha import AshaSearcher
from shipyard.search.hyperband import HyperbandSearcher
from shipyard.search.population import PopulationSearcher
from shipyard.search.registry import make_searcher
from shipyard.search.rungs import scaled_down, unit_of

# Searchers whose module previews itself: name -> module
SELF_PREVIEWING = {"pbt": "shipyard.search.pbt", "optuna": "shipyard.search.optuna_search"}

Rung = tuple[int, int | None]  # (trials, length)


def preview(searcher_dict: dict[str, Any], space: dict[str, Any], seed: int) -> dict[str, Any]:
    name = searcher_dict.get("name") if isinstance(searcher_dict, dict) else None
    if isinstance(name, str) and name in SELF_PREVIEWING:
        return _delegated(name, searcher_dict, space)
    searcher = make_searcher(searcher_dict, space, seed)  # NotSupportedYet, ConfigError
    options = getattr(searcher, "options", None)
    length = options.length if options is not None else None
    brackets: list[list[Rung]]
    if isinstance(searcher, AshaSearcher):
        brackets = [
            [
                (max(scaled_down(b.max_trials, b.divisor, k), 1), units)
                for k, units in enumerate(b.lengths)
            ]
            for b in searcher.brackets
        ]
    elif isinstance(searcher, HyperbandSearcher):
        brackets = [
            [(n, units) for n, units in zip(b.sizes, b.lengths, strict=True)]
            for b in searcher.brackets
        ]
    elif isinstance(searcher, PopulationSearcher):
        brackets = [[(searcher.total_trials, length)]]
    else:
        return no_preview(str(name))
    plan = _plan(str(name), brackets, length)
    if length is None:
        plan["unit"] = "trials"
        plan["note"] = "the config sets no max_length or max_time: compute is counted in trials"
    else:
        assert options is not None
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


def no_preview(name: str) -> dict[str, Any]:
    """The answer for a searcher that cannot preview itself: the same shape, empty."""
    return {
        "searcher": name,
        "unit": "trials",
        "brackets": [],
        "total_trials": 0,
        "compute": 0,
        "random_search_compute": 0,
        "ratio": None,
        "note": f"no preview for {name}",
    }


def _delegated(name: str, searcher_dict: dict[str, Any], space: dict[str, Any]) -> dict[str, Any]:
    try:
        module = importlib.import_module(SELF_PREVIEWING[name])
    except ImportError:
        module = None
    preview_plan = getattr(module, "preview_plan", None)
    if preview_plan is None:
        return no_preview(name)
    result: dict[str, Any] = preview_plan(searcher_dict, space)
    return result
