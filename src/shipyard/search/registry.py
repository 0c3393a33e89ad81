"""Searcher names to classes; the only place that knows which algorithms exist."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from shipyard.common.config.searcher import BaseSearcher
from shipyard.search.adaptive_asha import AdaptiveAshaSearcher
from shipyard.search.asha import AsyncHalvingSearcher
from shipyard.search.base import Searcher
from shipyard.search.grid import GridSearcher
from shipyard.search.hyperband import HyperbandSearcher
from shipyard.search.optuna import OptunaSearcher
from shipyard.search.pbt import PbtSearcher
from shipyard.search.random_search import RandomSearcher
from shipyard.search.single import SingleSearcher

# Every factory takes (its searcher's config model, the normalized space, seed).
SearcherFactory = Callable[[Any, dict[str, Any], int], Searcher]

SEARCHERS: dict[str, SearcherFactory] = {
    "single": SingleSearcher,
    "random": RandomSearcher,
    "grid": GridSearcher,
    "async_halving": AsyncHalvingSearcher,
    "adaptive_asha": AdaptiveAshaSearcher,
    "hyperband": HyperbandSearcher,
    "pbt": PbtSearcher,
    "optuna": OptunaSearcher,  # imports Optuna (an optional extra) only when built
}


def make_searcher(config: BaseSearcher, space: dict[str, Any], seed: int) -> Searcher:
    """Build the searcher a validated config names (ExperimentConfig.searcher, or
    searcher_from_json of what the master stored), for the normalized hyperparameter
    space (ExperimentConfig.hyperparameter_space()).

    Raises NotSupportedYet when an optional extra the searcher needs is missing."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"make_searcher: seed must be an integer, got {seed!r}")
    return SEARCHERS[config.name](config, space, seed)


def full_length(config: BaseSearcher) -> int | None:
    """How long a trial of this search trains at most, in the searcher's time unit
    (None: the search sets no length). PBT's is its rounds times their length."""
    return config.training_length()
