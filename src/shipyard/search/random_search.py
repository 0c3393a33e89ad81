"""random: max_trials points drawn independently at random from the space."""

from __future__ import annotations

from typing import Any

from shipyard.common.config.searcher import RandomSearcher as RandomConfig
from shipyard.search.options import SearcherOptions
from shipyard.search.population import PopulationSearcher
from shipyard.search.sampling import rng_for_trial, sample_point


class RandomSearcher(PopulationSearcher):
    kind = "random"

    def __init__(self, config: RandomConfig, space: dict[str, Any], seed: int) -> None:
        super().__init__(SearcherOptions.of(config), total_trials=config.max_trials)
        self.space = space
        self.seed = seed

    def hparams_for(self, index: int) -> dict[str, Any]:
        return sample_point(self.space, rng_for_trial(self.seed, index))
