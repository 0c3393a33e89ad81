"""grid: one trial for every point of the Cartesian product of the hyperparameters' values.

Determined's grid searcher has no max_trials: the grid decides how many trials run.
"""

from __future__ import annotations

from typing import Any

from shipyard.common.config.searcher import GridSearcher as GridConfig
from shipyard.search.options import SearcherOptions
from shipyard.search.population import PopulationSearcher
from shipyard.search.sampling import grid_axes, grid_point, grid_size


class GridSearcher(PopulationSearcher):
    kind = "grid"

    def __init__(self, config: GridConfig, space: dict[str, Any], seed: int) -> None:
        self.axes = grid_axes(space)
        super().__init__(SearcherOptions.of(config), total_trials=grid_size(self.axes))

    def hparams_for(self, index: int) -> dict[str, Any]:
        return grid_point(self.axes, index)
