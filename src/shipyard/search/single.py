"""single: one trial at one point drawn at random from the space (as Determined does)."""

from __future__ import annotations

from typing import Any

from shipyard.common.config.searcher import SingleSearcher as SingleConfig
from shipyard.search.options import SearcherOptions
from shipyard.search.population import PopulationSearcher
from shipyard.search.sampling import rng_for_trial, sample_point


class SingleSearcher(PopulationSearcher):
    kind = "single"

    def __init__(self, config: SingleConfig, space: dict[str, Any], seed: int) -> None:
        super().__init__(SearcherOptions.of(config), total_trials=1)
        self.space = space
        self.seed = seed

    def hparams_for(self, index: int) -> dict[str, Any]:
        return sample_point(self.space, rng_for_trial(self.seed, index))
