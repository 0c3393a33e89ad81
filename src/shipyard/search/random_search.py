"""random: max_trials points drawn independently at random from the space."""

from __future__ import annotations

from typing import Any

from shipyard.search.options import SearcherOptions
from shipyard.search.population import PopulationSearcher
from shipyard.search.sampling import rng_for_trial, sample_point, validate_space


class RandomSearcher(PopulationSearcher):
    kind = "random"

    def __init__(self, options: SearcherOptions, space: dict[str, Any], seed: int) -> None:
        validate_space(space)
        super().__init__(options, total_trials=options.require_max_trials())
        self.space = space
        self.seed = seed

    def hparams_for(self, index: int) -> dict[str, Any]:
        return sample_point(self.space, rng_for_trial(self.seed, index))
