"""optuna: Optuna's samplers and pruners (pip install 'shipyard[optuna]'). With
`objectives`, metric and smaller_is_better are those of the first objective."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, Tag, field_validator, model_validator

from shipyard.common.config._base import StrictModel, invalid, tag_discriminator
from shipyard.common.config.searcher._common import BaseSearcher, Divisor, name_among, number

OPTUNA_SAMPLERS = ("tpe", "cmaes", "gp", "random", "nsga2")
MULTI_OBJECTIVE_SAMPLERS = ("tpe", "nsga2", "random")
PRUNER_NAMES = ("none", "asha", "median", "percentile", "successive_halving", "hyperband")


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
            raise invalid(f"must be between 0 and 100, got {number(value)}")
        return value


class SuccessiveHalvingPruner(StrictModel):
    name: Literal["successive_halving"]
    min_resource: int = Field(default=1, ge=1)
    reduction_factor: int = Field(default=3, ge=2)


class HyperbandPruner(StrictModel):
    name: Literal["hyperband"]
    min_resource: int = Field(default=1, ge=1)
    reduction_factor: int = Field(default=3, ge=2)


Pruner = Annotated[
    Annotated[NoPruner, Tag("none")]
    | Annotated[AshaPruner, Tag("asha")]
    | Annotated[MedianPruner, Tag("median")]
    | Annotated[PercentilePruner, Tag("percentile")]
    | Annotated[SuccessiveHalvingPruner, Tag("successive_halving")]
    | Annotated[HyperbandPruner, Tag("hyperband")],
    tag_discriminator("unknown pruner", "name", PRUNER_NAMES, name_among(PRUNER_NAMES)),
]


class OptunaSearcher(BaseSearcher):
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
                    f"pruner {pruner} needs a single objective (Optuna cannot prune a "
                    f"multi-objective study), and objectives has {len(objectives)}; "
                    "use pruner {name: none}",
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

    def objective_list(self) -> list[OptunaObjective]:
        """The objectives; one (metric, smaller_is_better) when the config names a metric."""
        if self.objectives:
            return list(self.objectives)
        return [OptunaObjective(metric=self.metric, smaller_is_better=self.smaller_is_better)]

    def to_dict(self) -> dict:
        """objectives always a list (one entry for a single metric); pruner with its name."""
        out = super().to_dict()
        if self.objectives is None:
            out["objectives"] = [
                {"metric": self.metric, "smaller_is_better": self.smaller_is_better}
            ]
        return out
