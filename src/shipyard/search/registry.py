"""Searcher names to classes; the only place that knows which algorithms exist."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from shipyard.common.errors import NotSupportedYet
from shipyard.search.adaptive_asha import AdaptiveAshaSearcher
from shipyard.search.asha import AsyncHalvingSearcher
from shipyard.search.base import Searcher
from shipyard.search.grid import GridSearcher
from shipyard.search.hyperband import HyperbandSearcher
from shipyard.search.options import SearcherOptions
from shipyard.search.optuna_search import OptunaSearcher
from shipyard.search.pbt import PbtSearcher
from shipyard.search.random_search import RandomSearcher
from shipyard.search.single import SingleSearcher

# Every factory takes (options, normalized space, seed).
SearcherFactory = Callable[[SearcherOptions, dict[str, Any], int], Searcher]

SEARCHERS: dict[str, SearcherFactory] = {
    "single": SingleSearcher,
    "random": RandomSearcher,
    "grid": GridSearcher,
}

# Searchers that read fields beyond SearcherOptions (divisor, num_rungs, ...) take the
# whole searcher section, as a plain dict, in place of the options.
SectionFactory = Callable[[dict[str, Any], dict[str, Any], int], Searcher]

SECTION_SEARCHERS: dict[str, SectionFactory] = {
    "async_halving": AsyncHalvingSearcher,
    "adaptive_asha": AdaptiveAshaSearcher,
    "hyperband": HyperbandSearcher,
    "pbt": PbtSearcher,
    "optuna": OptunaSearcher,  # imports Optuna (an optional extra) only when built
}


def make_searcher(searcher: dict[str, Any], space: dict[str, Any], seed: int) -> Searcher:
    """Build the searcher a config names, for the normalized hyperparameter space.

    Raises NotSupportedYet for an algorithm Shipyard lacks, ConfigError for bad fields.
    """
    name = searcher.get("name") if isinstance(searcher, dict) else None
    if name not in SEARCHERS and name not in SECTION_SEARCHERS:
        supported = ", ".join(sorted([*SEARCHERS, *SECTION_SEARCHERS]))
        raise NotSupportedYet(
            f"searcher {name!r} is not supported yet",
            details=[{"path": "searcher.name", "message": f"supported searchers: {supported}"}],
        )
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"make_searcher: seed must be an integer, got {seed!r}")
    if name in SECTION_SEARCHERS:
        return SECTION_SEARCHERS[name](searcher, space, seed)
    return SEARCHERS[name](SearcherOptions.from_dict(searcher), space, seed)


def full_length(searcher: dict[str, Any]) -> int | None:
    """How long a trial of this search trains at most, in the searcher's time unit
    (None: the search sets no length). PBT's is its rounds times their length."""
    if searcher.get("name") == "pbt":
        return int(searcher["num_rounds"]) * int(searcher["length_per_round"])
    return SearcherOptions.from_dict(searcher).length
