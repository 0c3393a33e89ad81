"""The successive-halving searchers: adaptive_asha, async_halving and hyperband. Their
rules need the plan the searcher will run (rung_math), so that a plan that cannot run is
refused with the config, not when the search starts."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from shipyard.common.config._base import invalid
from shipyard.common.config.searcher._common import (
    BaseSearcher,
    Divisor,
    Mode,
    PositiveInt,
    number,
)
from shipyard.common.config.searcher.rung_math import (
    adaptive_rungs,
    exact,
    hyperband_brackets,
    split_trials,
)


class AshaSearcher(BaseSearcher):
    """Determined's adaptive_asha: brackets of asynchronous successive halving, chosen by
    mode (or bracket_rungs). Always the stopping variant: stop_once is accepted as is."""

    name: Literal["adaptive_asha"]
    max_trials: int = Field(ge=1)
    mode: Mode = "standard"
    divisor: Divisor = 4.0
    max_rungs: int = Field(default=5, ge=1)
    bracket_rungs: list[PositiveInt] = Field(default_factory=list)
    stop_once: bool = False

    @model_validator(mode="after")
    def _check(self) -> AshaSearcher:
        self._check_length_form(required=True)
        if self.bracket_rungs:
            self._check_reachable(max(self.bracket_rungs), self.divisor)
        rungs = self.bracket_plan()
        if split_trials(self.max_trials, exact(self.divisor), rungs)[0] < 1:
            raise invalid(
                f"{self.max_trials} trials are too few for the brackets {rungs}: "
                "raise max_trials or list fewer bracket_rungs",
                subpath="max_trials",
            )
        return self

    def bracket_plan(self) -> list[int]:
        """The rungs of each bracket, most first."""
        length = self.training_length()
        assert length is not None  # required by _check_length_form
        return adaptive_rungs(
            length,
            exact(self.divisor),
            self.max_trials,
            self.mode,
            self.max_rungs,
            self.bracket_rungs,
        )


class AsyncHalvingSearcher(BaseSearcher):
    """Determined's async_halving: one bracket of num_rungs rungs."""

    name: Literal["async_halving"]
    num_rungs: int = Field(ge=1)
    max_trials: int = Field(ge=1)
    divisor: Divisor = 4.0
    stop_once: bool = False

    @model_validator(mode="after")
    def _check(self) -> AsyncHalvingSearcher:
        self._check_length_form(required=True)
        self._check_reachable(self.num_rungs, self.divisor)
        return self


class HyperbandSearcher(BaseSearcher):
    """Shipyard's own: synchronous successive-halving brackets (Li et al.'s Hyperband)."""

    name: Literal["hyperband"]
    divisor: Divisor = 3.0
    max_rungs: int = Field(default=5, ge=1)
    max_trials: int | None = Field(default=None, ge=1)
    max_concurrent_trials: int = Field(default=0, ge=0)

    @model_validator(mode="after")
    def _check(self) -> HyperbandSearcher:
        self._check_length_form(required=True)
        # At least two rungs must fit: a length below the divisor leaves nothing to halve.
        self._check_reachable(min(self.max_rungs, 2), self.divisor)
        if self.max_trials is not None and self.max_trials < self.total_trials():
            raise invalid(
                f"hyperband with {self.training_length()} {self.time_metric or 'steps'}, "
                f"divisor {number(self.divisor)} and max_rungs {self.max_rungs} needs "
                f"{self.total_trials()} trials, got {self.max_trials}: raise max_trials, "
                "lower max_rungs or leave max_trials out",
                subpath="max_trials",
            )
        return self

    def total_trials(self) -> int:
        """The trials of one Hyperband iteration: the sum of every bracket's."""
        length = self.training_length()
        assert length is not None  # required by _check_length_form
        return sum(n for _, n in hyperband_brackets(length, exact(self.divisor), self.max_rungs))
