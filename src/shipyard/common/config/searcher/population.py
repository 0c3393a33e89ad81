"""single, random and grid: a fixed number of trials, each trained to the full length."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from shipyard.common.config.searcher._common import BaseSearcher


class SingleSearcher(BaseSearcher):
    name: Literal["single"]

    def to_dict(self) -> dict:
        return {**super().to_dict(), "max_trials": 1}


class RandomSearcher(BaseSearcher):
    name: Literal["random"]
    max_trials: int = Field(ge=1)


class GridSearcher(BaseSearcher):
    """The trial count comes from the hyperparameter space (ExperimentConfig.grid_size)."""

    name: Literal["grid"]
