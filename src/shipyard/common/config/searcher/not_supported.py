"""Determined's searchers that Shipyard parses and validates, then refuses."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from shipyard.common.config._base import SearcherLength
from shipyard.common.config.searcher._common import Mode, ParsedOnly


class LegacyAdaptiveSearcher(ParsedOnly):
    name: Literal["adaptive"]
    max_trials: int | None = Field(default=None, ge=1)
    budget: SearcherLength | None = None
    mode: Mode = "standard"
    divisor: float = Field(default=4, gt=1)
    max_rungs: int = Field(default=5, ge=1)
    bracket_rungs: list[int] | None = None
    train_stragglers: bool = True

    def refusal(self) -> str:
        return (
            "adaptive (Determined's deprecated adaptive searcher) is not supported yet; "
            "use adaptive_asha, which takes max_trials, max_length, mode, divisor and max_rungs"
        )


class AdaptiveSimpleSearcher(ParsedOnly):
    name: Literal["adaptive_simple"]
    max_trials: int = Field(ge=1)
    mode: Mode = "standard"
    divisor: float = Field(default=4, gt=1)
    max_rungs: int = Field(default=5, ge=1)

    def refusal(self) -> str:
        return (
            "adaptive_simple (Determined's deprecated adaptive searcher) is not supported yet; "
            "use adaptive_asha, which takes the same max_trials, max_length, mode, divisor and "
            "max_rungs"
        )


class CustomSearcher(ParsedOnly):
    name: Literal["custom"]
    unit: Literal["batches", "records", "epochs"] | None = None
