"""The `searcher` section: Determined's searchers by name. Only single, random and grid run
in this version; the others are parsed and validated, then refused as not supported yet."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, Tag, field_validator, model_validator

from shipyard.common.config._base import (
    SearcherLength,
    StrictModel,
    invalid,
    not_supported,
    tag_discriminator,
)

RUNNABLE_SEARCHERS = ("single", "random", "grid")
PARSED_ONLY_SEARCHERS = ("adaptive_asha", "adaptive", "adaptive_simple", "pbt", "custom")
SEARCHER_NAMES = RUNNABLE_SEARCHERS + PARSED_ONLY_SEARCHERS


class _Searcher(StrictModel):
    name: str
    metric: str = Field(min_length=1)
    smaller_is_better: bool = True
    max_length: SearcherLength | None = None
    time_metric: str | None = None
    max_time: int | None = Field(default=None, ge=1)
    # 0 means no limit, as in Determined.
    max_concurrent_trials: int = Field(default=16, ge=0)
    source_trial_id: int | None = None
    source_checkpoint_uuid: str | None = None

    @field_validator("source_trial_id", "source_checkpoint_uuid")
    @classmethod
    def _no_warm_start(cls, value: Any) -> Any:
        if value is not None:
            raise not_supported(
                "starting trials from another trial's checkpoint is not supported yet; "
                "load the checkpoint in your script instead"
            )
        return value

    def to_dict(self) -> dict:
        """Determined's field names with defaults filled; max_length as an int plus its unit."""
        out = self.model_dump(mode="json", exclude={"max_length"})
        out["max_length"] = self.max_length.value if self.max_length else None
        out["max_length_unit"] = self.max_length.unit if self.max_length else None
        return out


class _ParsedOnly(_Searcher):
    """Validated like Determined does, then refused: the algorithm is not implemented yet."""

    def check(self) -> None:
        """Checks across fields; a real error is reported before "not supported yet"."""

    @model_validator(mode="after")
    def _refuse(self) -> _ParsedOnly:
        self.check()
        raise not_supported(
            f"{self.name} is not supported yet; this version runs {', '.join(RUNNABLE_SEARCHERS)}",
            subpath="name",
        )


class SingleSearcher(_Searcher):
    name: Literal["single"]

    def to_dict(self) -> dict:
        return {**super().to_dict(), "max_trials": 1}


class RandomSearcher(_Searcher):
    name: Literal["random"]
    max_trials: int = Field(ge=1)


class GridSearcher(_Searcher):
    """The trial count comes from the hyperparameter space (ExperimentConfig.grid_size)."""

    name: Literal["grid"]


class AshaSearcher(_ParsedOnly):
    name: Literal["adaptive_asha"]
    max_trials: int = Field(ge=1)
    num_rungs: int | None = Field(default=None, ge=1)
    divisor: float = Field(default=4, gt=1)
    mode: Literal["aggressive", "standard", "conservative"] = "standard"
    max_rungs: int = Field(default=5, ge=1)
    bracket_rungs: list[int] | None = None
    stop_once: bool = False

    def check(self) -> None:
        if self.max_length is None and (self.max_time is None or self.time_metric is None):
            raise invalid("adaptive_asha needs max_length, or max_time with time_metric")


class LegacyAdaptiveSearcher(_ParsedOnly):
    name: Literal["adaptive"]
    max_trials: int | None = Field(default=None, ge=1)
    budget: SearcherLength | None = None
    mode: Literal["aggressive", "standard", "conservative"] = "standard"
    divisor: float = Field(default=4, gt=1)
    max_rungs: int = Field(default=5, ge=1)
    bracket_rungs: list[int] | None = None
    train_stragglers: bool = True


class AdaptiveSimpleSearcher(_ParsedOnly):
    name: Literal["adaptive_simple"]
    max_trials: int = Field(ge=1)
    mode: Literal["aggressive", "standard", "conservative"] = "standard"
    divisor: float = Field(default=4, gt=1)
    max_rungs: int = Field(default=5, ge=1)


class ReplaceFunction(StrictModel):
    truncate_fraction: float = Field(ge=0, le=0.5)


class ExploreFunction(StrictModel):
    resample_probability: float = Field(ge=0, le=1)
    perturb_factor: float = Field(ge=0, le=1)


class PbtSearcher(_ParsedOnly):
    name: Literal["pbt"]
    population_size: int = Field(ge=1)
    num_rounds: int = Field(ge=1)
    length_per_round: SearcherLength
    replace_function: ReplaceFunction
    explore_function: ExploreFunction


class CustomSearcher(_ParsedOnly):
    name: Literal["custom"]
    unit: Literal["batches", "records", "epochs"] | None = None


def _searcher_name(raw: Any) -> str | None:
    name = raw.get("name") if isinstance(raw, dict) else getattr(raw, "name", None)
    return name if name in SEARCHER_NAMES else None


SearcherConfig = Annotated[
    Annotated[SingleSearcher, Tag("single")]
    | Annotated[RandomSearcher, Tag("random")]
    | Annotated[GridSearcher, Tag("grid")]
    | Annotated[AshaSearcher, Tag("adaptive_asha")]
    | Annotated[LegacyAdaptiveSearcher, Tag("adaptive")]
    | Annotated[AdaptiveSimpleSearcher, Tag("adaptive_simple")]
    | Annotated[PbtSearcher, Tag("pbt")]
    | Annotated[CustomSearcher, Tag("custom")],
    tag_discriminator("unknown searcher", "name", SEARCHER_NAMES, _searcher_name),
]
