"""The `searcher` section: Determined's searchers by name, plus Shipyard's hyperband and
optuna. adaptive, adaptive_simple and custom are parsed and validated, then refused as not
supported yet. docs/searchers.md describes every field."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, Tag, field_validator, model_validator

from shipyard.common.config._base import (
    SearcherLength,
    StrictModel,
    invalid,
    not_supported,
    tag_discriminator,
)

RUNNABLE_SEARCHERS = (
    "single",
    "random",
    "grid",
    "adaptive_asha",
    "async_halving",
    "hyperband",
    "pbt",
    "optuna",
)
PARSED_ONLY_SEARCHERS = ("adaptive", "adaptive_simple", "custom")
SEARCHER_NAMES = RUNNABLE_SEARCHERS + PARSED_ONLY_SEARCHERS

Mode = Literal["aggressive", "standard", "conservative"]
PositiveInt = Annotated[int, Field(ge=1)]

OPTUNA_SAMPLERS = ("tpe", "cmaes", "gp", "random", "nsga2")
MULTI_OBJECTIVE_SAMPLERS = ("tpe", "nsga2", "random")
PRUNER_NAMES = ("none", "asha", "median", "percentile", "successive_halving", "hyperband")


def _number(value: float) -> str:
    """4.0 -> "4", 2.5 -> "2.5": numbers as a person wrote them."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _check_divisor(value: float) -> float:
    """Determined accepts any divisor above 1; Shipyard wants at least 2 (docs/searchers.md):
    below 2, a rung keeps more than half of its trials and saves next to nothing."""
    if not math.isfinite(value):
        raise invalid(f"divisor must be a finite number, got {value}")
    if value < 2:
        raise invalid(f"divisor must be at least 2, got {_number(value)}")
    return value


# A number >= 2 (docs/searchers.md explains why stricter than Determined).
Divisor = Annotated[float, AfterValidator(_check_divisor)]


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

    # Checks shared by the searchers that train trials in stages (rungs, rounds, pruning).

    def _check_length_form(self, *, required: bool) -> None:
        """max_length, or time_metric with max_time (Determined's newer form); not both."""
        if self.time_metric == "":
            raise invalid("must not be empty", subpath="time_metric")
        if self.time_metric is not None and self.max_time is None:
            raise invalid(
                f"time_metric {self.time_metric!r} needs max_time: how far a trial trains, "
                f"in {self.time_metric}",
                subpath="max_time",
            )
        if self.max_time is not None and self.time_metric is None:
            raise invalid(
                "max_time needs time_metric: the metric each validation reports as the "
                "trial's progress (e.g. batches)",
                subpath="time_metric",
            )
        if self.max_time is not None and self.max_length is not None:
            raise invalid(
                "give max_length or time_metric with max_time, not both", subpath="max_length"
            )
        if required and self.max_time is None and self.max_length is None:
            raise invalid(
                f"{self.name} needs a training length: max_length (like {{batches: 1000}}), "
                "or max_time with time_metric",
                subpath="max_length",
            )

    def _length(self) -> tuple[str, int, str | None] | None:
        """(field, value, unit) of the training length, None when there is none."""
        if self.max_time is not None:
            return "max_time", self.max_time, self.time_metric
        if self.max_length is not None:
            return "max_length", self.max_length.value, self.max_length.unit
        return None

    def _check_reachable(self, rungs: int, divisor: float) -> None:
        """The first of `rungs` rungs trains length / divisor**(rungs - 1): at least 1."""
        found = self._length()
        if found is None or rungs <= 1:
            return
        field, length, unit = found
        exponent = (rungs - 1) * math.log(divisor)
        if math.log(length) >= exponent - 1e-9:
            return
        unit_text = f" {unit}" if unit else ""
        if exponent > math.log(1e15):
            hint = "use fewer rungs"
        else:
            need = divisor ** (rungs - 1)
            hint = f"use {field} >= {math.ceil(need - 1e-9)} or fewer rungs"
        first = length / math.exp(exponent) if exponent < 700 else 0.0
        raise invalid(
            f"{field} {length} is too short for {rungs} rungs with divisor {_number(divisor)}: "
            f"the first rung would need {first:.2g}{unit_text}; {hint}",
            subpath=field,
        )


class _ParsedOnly(_Searcher):
    """Validated like Determined does, then refused: the algorithm is not implemented yet."""

    def check(self) -> None:
        """Checks across fields; a real error is reported before "not supported yet"."""

    def refusal(self) -> str:
        return (
            f"{self.name} is not supported yet; this version runs {', '.join(RUNNABLE_SEARCHERS)}"
        )

    @model_validator(mode="after")
    def _refuse(self) -> _ParsedOnly:
        self.check()
        raise not_supported(self.refusal(), subpath="name")


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


class AshaSearcher(_Searcher):
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
        return self


class AsyncHalvingSearcher(_Searcher):
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


class HyperbandSearcher(_Searcher):
    """Shipyard's own: synchronous successive-halving brackets (Li et al.'s Hyperband)."""

    name: Literal["hyperband"]
    divisor: Divisor = 3.0
    max_rungs: int = Field(default=5, ge=1)
    max_trials: int | None = Field(default=None, ge=1)
    max_concurrent_trials: int = Field(default=0, ge=0)

    @model_validator(mode="after")
    def _check(self) -> HyperbandSearcher:
        self._check_length_form(required=True)
        return self


class LegacyAdaptiveSearcher(_ParsedOnly):
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


class AdaptiveSimpleSearcher(_ParsedOnly):
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


class ReplaceFunction(StrictModel):
    truncate_fraction: float = Field(ge=0, le=0.5)


class ExploreFunction(StrictModel):
    resample_probability: float = Field(ge=0, le=1)
    perturb_factor: float = Field(ge=0, le=1)


class PbtSearcher(_Searcher):
    """Determined's pbt. A trial trains num_rounds * length_per_round in all; with
    time_metric, length_per_round counts that metric and may be a bare integer."""

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

    def to_dict(self) -> dict:
        """length_per_round as an int plus length_per_round_unit, like max_length."""
        out = super().to_dict()
        out["length_per_round"] = self.length_per_round.value
        out["length_per_round_unit"] = self.length_per_round.unit
        return out


# Optuna.


class OptunaObjective(StrictModel):
    metric: str = Field(min_length=1)
    smaller_is_better: bool = True


class NoPruner(StrictModel):
    name: Literal["none"]


class AshaPruner(StrictModel):
    name: Literal["asha"]
    divisor: Divisor = 4.0
    num_rungs: int = Field(default=4, ge=1)


class MedianPruner(StrictModel):
    name: Literal["median"]
    n_startup_trials: int = Field(default=5, ge=0)
    n_warmup_steps: int = Field(default=0, ge=0)


class PercentilePruner(StrictModel):
    name: Literal["percentile"]
    percentile: float
    n_startup_trials: int = Field(default=5, ge=0)
    n_warmup_steps: int = Field(default=0, ge=0)

    @field_validator("percentile")
    @classmethod
    def _in_range(cls, value: float) -> float:
        if not 0 <= value <= 100:
            raise invalid(f"must be between 0 and 100, got {_number(value)}")
        return value


class SuccessiveHalvingPruner(StrictModel):
    name: Literal["successive_halving"]
    min_resource: int = Field(default=1, ge=1)
    reduction_factor: int = Field(default=3, ge=2)


class HyperbandPruner(StrictModel):
    name: Literal["hyperband"]
    min_resource: int = Field(default=1, ge=1)
    reduction_factor: int = Field(default=3, ge=2)


def _name_among(names: tuple[str, ...]) -> Callable[[Any], str | None]:
    """The discriminator of a union tagged by `name`: the raw value's name if it is known."""

    def name_of(raw: Any) -> str | None:
        name = raw.get("name") if isinstance(raw, dict) else getattr(raw, "name", None)
        return name if name in names else None

    return name_of


Pruner = Annotated[
    Annotated[NoPruner, Tag("none")]
    | Annotated[AshaPruner, Tag("asha")]
    | Annotated[MedianPruner, Tag("median")]
    | Annotated[PercentilePruner, Tag("percentile")]
    | Annotated[SuccessiveHalvingPruner, Tag("successive_halving")]
    | Annotated[HyperbandPruner, Tag("hyperband")],
    tag_discriminator("unknown pruner", "name", PRUNER_NAMES, _name_among(PRUNER_NAMES)),
]


class OptunaSearcher(_Searcher):
    """Optuna's samplers and pruners (pip install 'shipyard[optuna]'). With `objectives`,
    metric and smaller_is_better are those of the first objective."""

    name: Literal["optuna"]
    sampler: Literal["tpe", "cmaes", "gp", "random", "nsga2"] = "tpe"
    max_trials: int = Field(ge=1)
    # Optuna learns from finished trials: asking for many points at once is random search.
    max_concurrent_trials: int = Field(default=4, ge=0)
    objectives: list[OptunaObjective] | None = Field(default=None, min_length=1)
    pruner: Pruner = Field(default_factory=lambda: NoPruner(name="none"))

    @model_validator(mode="before")
    @classmethod
    def _metric_from_objectives(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        objectives = data.get("objectives")
        first = objectives[0] if isinstance(objectives, list) and objectives else None
        if not isinstance(first, dict):
            return data
        data = dict(data)
        if data.get("metric") is None and "metric" in first:
            data["metric"] = first["metric"]
        if data.get("smaller_is_better") is None:
            data["smaller_is_better"] = first.get("smaller_is_better", True)
        return data

    @model_validator(mode="after")
    def _check(self) -> OptunaSearcher:
        objectives = self.objectives or []
        if objectives:
            first = objectives[0]
            if self.metric != first.metric:
                raise invalid(
                    f"metric {self.metric!r} differs from the first objective's "
                    f"({first.metric!r}); leave metric out or make them the same",
                    subpath="metric",
                )
            if self.smaller_is_better != first.smaller_is_better:
                raise invalid(
                    "smaller_is_better differs from the first objective's; leave it out or "
                    "make them the same",
                    subpath="smaller_is_better",
                )
            seen: set[str] = set()
            for i, objective in enumerate(objectives):
                if objective.metric in seen:
                    raise invalid(
                        f"metric {objective.metric!r} is already an objective",
                        subpath=f"objectives[{i}].metric",
                    )
                seen.add(objective.metric)
        if len(objectives) > 1 and self.sampler not in MULTI_OBJECTIVE_SAMPLERS:
            raise invalid(
                f"sampler {self.sampler} optimizes one objective, and objectives has "
                f"{len(objectives)}; use tpe, nsga2 or random",
                subpath="sampler",
            )
        self._check_length_form(required=False)
        pruner = self.pruner.name
        if pruner != "none":
            if len(objectives) > 1:
                raise invalid(
                    f"pruner {pruner} needs a single objective (Optuna prunes one metric), "
                    f"and objectives has {len(objectives)}; use pruner {{name: none}}",
                    subpath="pruner",
                )
            if self._length() is None:
                raise invalid(
                    f"pruner {pruner} needs a training length: max_length, or max_time with "
                    "time_metric",
                    subpath="pruner",
                )
        if isinstance(self.pruner, AshaPruner):
            self._check_reachable(self.pruner.num_rungs, self.pruner.divisor)
        return self

    def to_dict(self) -> dict:
        """objectives always a list (one entry for a single metric); pruner with its name."""
        out = super().to_dict()
        if self.objectives is None:
            out["objectives"] = [
                {"metric": self.metric, "smaller_is_better": self.smaller_is_better}
            ]
        return out


class CustomSearcher(_ParsedOnly):
    name: Literal["custom"]
    unit: Literal["batches", "records", "epochs"] | None = None


SearcherConfig = Annotated[
    Annotated[SingleSearcher, Tag("single")]
    | Annotated[RandomSearcher, Tag("random")]
    | Annotated[GridSearcher, Tag("grid")]
    | Annotated[AshaSearcher, Tag("adaptive_asha")]
    | Annotated[AsyncHalvingSearcher, Tag("async_halving")]
    | Annotated[HyperbandSearcher, Tag("hyperband")]
    | Annotated[PbtSearcher, Tag("pbt")]
    | Annotated[OptunaSearcher, Tag("optuna")]
    | Annotated[LegacyAdaptiveSearcher, Tag("adaptive")]
    | Annotated[AdaptiveSimpleSearcher, Tag("adaptive_simple")]
    | Annotated[CustomSearcher, Tag("custom")],
    tag_discriminator("unknown searcher", "name", SEARCHER_NAMES, _name_among(SEARCHER_NAMES)),
]
