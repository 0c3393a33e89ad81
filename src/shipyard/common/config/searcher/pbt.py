"""pbt: Determined's population-based training. A trial trains num_rounds *
length_per_round in all; with time_metric, length_per_round counts that metric and may be
a bare integer."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from shipyard.common.config._base import SearcherLength, StrictModel, invalid
from shipyard.common.config.searcher._common import BaseSearcher


class ReplaceFunction(StrictModel):
    truncate_fraction: float = Field(ge=0, le=0.5)


class ExploreFunction(StrictModel):
    resample_probability: float = Field(ge=0, le=1)
    perturb_factor: float = Field(ge=0, le=1)


class PbtSearcher(BaseSearcher):
    name: Literal["pbt"]
    population_size: int = Field(ge=1)
    num_rounds: int = Field(ge=1)
    length_per_round: SearcherLength
    replace_function: ReplaceFunction
    explore_function: ExploreFunction

    @model_validator(mode="after")
    def _check(self) -> PbtSearcher:
        if self.max_length is not None:
            raise invalid(
                "pbt trains num_rounds rounds of length_per_round; max_length is not used",
                subpath="max_length",
            )
        if self.max_time is not None:
            raise invalid(
                "pbt trains num_rounds rounds of length_per_round; max_time is not used",
                subpath="max_time",
            )
        unit = self.length_per_round.unit
        if self.time_metric is None and unit is None:
            raise invalid(
                f"give a unit, like {{batches: {self.length_per_round.value}}}; a bare "
                "integer is only for a length in time_metric",
                subpath="length_per_round",
            )
        if self.time_metric is not None and unit is not None and unit != self.time_metric:
            raise invalid(
                f"with time_metric {self.time_metric!r}, length_per_round counts "
                f"{self.time_metric}: write length_per_round: {self.length_per_round.value}",
                subpath="length_per_round",
            )
        return self

    def training_length(self) -> int:
        """The rounds' length: pbt sets no max_length."""
        return self.num_rounds * self.length_per_round.value

    def to_dict(self) -> dict:
        """length_per_round as an int plus length_per_round_unit, like max_length."""
        out = super().to_dict()
        out["length_per_round"] = self.length_per_round.value
        out["length_per_round_unit"] = self.length_per_round.unit
        return out
