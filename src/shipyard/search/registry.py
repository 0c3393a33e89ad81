"""Searcher names to classes; the only place that knows which algorithms exist."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from shipyard.common.errors import NotSupportedYet
from shipyard.search.base import Searcher
from shipyard.search.grid import GridSearcher
from shipyard.search.options import SearcherOptions
from shipyard.search.random_search import RandomSearcher
from shipyard.search.single import SingleSearcher

# Every factory takes (options, normalized space, seed).
SearcherFactory = Callable[[SearcherOptions, dict[str, Any], int], Searcher]

SEARCHERS: dict[str, SearcherFactory] = {
    "single": SingleSearcher,
    "random": RandomSearcher,
    "grid": GridSearcher,
}


def make_searcher(searcher: dict[str, Any], space: dict[str, Any], seed: int) -> Searcher:
    """Build the searcher a config names, for the normalized hyperparameter space.

    Raises NotSupportedYet for an algorithm Shipyard lacks, ConfigError for bad fields.
    """
    name = searcher.get("name") if isinstance(searcher, dict) else None
    if name not in SEARCHERS:
        supported = ", ".join(sorted(SEARCHERS))
        raise NotSupportedYet(
            f"searcher {name!r} is not supported yet",
            details=[{"path": "searcher.name", "message": f"supported searchers: {supported}"}],
        )
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"make_searcher: seed must be an integer, got {seed!r}")
    return SEARCHERS[name](SearcherOptions.from_dict(searcher), space, seed)
