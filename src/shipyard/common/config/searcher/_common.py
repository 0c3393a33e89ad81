"""What every searcher section shares: the common fields, the training-length rules, and
the check that a number of rungs fits in that length."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, field_validator, model_validator

from shipyard.common.config._base import SearcherLength, StrictModel, invalid, not_supported

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


def number(value: float) -> str:
    """4.0 -> "4", 2.5 -> "2.5": numbers as a person wrote them."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _check_divisor(value: float) -> float:
    """Determined accepts any divisor above 1; Shipyard wants at least 2 (docs/searchers.md):
    below 2, a rung keeps more than half of its trials and saves next to nothing."""
    if not math.isfinite(value):
        raise invalid(f"divisor must be a finite number, got {value}")
    if value < 2:
        raise invalid(f"divisor must be at least 2, got {number(value)}")
    return value


# A number >= 2 (docs/searchers.md explains why stricter than Determined).
Divisor = Annotated[float, AfterValidator(_check_divisor)]


def name_among(names: tuple[str, ...]) -> Callable[[Any], str | None]:
    """The discriminator of a union tagged by `name`: the raw value's name if it is known."""

    def name_of(raw: Any) -> str | None:
        name = raw.get("name") if isinstance(raw, dict) else getattr(raw, "name", None)
        return name if name in names else None

    return name_of


class BaseSearcher(StrictModel):
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

    def training_length(self) -> int | None:
        """How long a trial trains at most, in the searcher's time unit (the time_metric, or
        steps_completed with max_length); None: the search sets no length."""
        if self.time_metric:
            return self.max_time
        return self.max_length.value if self.max_length else None

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
            f"{field} {length} is too short for {rungs} rungs with divisor {number(divisor)}: "
            f"the first rung would need {first:.2g}{unit_text}; {hint}",
            subpath=field,
        )


class ParsedOnly(BaseSearcher):
    """Validated like Determined does, then refused: the algorithm is not implemented yet."""

    def check(self) -> None:
        """Checks across fields; a real error is reported before "not supported yet"."""

    def refusal(self) -> str:
        return (
            f"{self.name} is not supported yet; this version runs {', '.join(RUNNABLE_SEARCHERS)}"
        )

    @model_validator(mode="after")
    def _refuse(self) -> ParsedOnly:
        self.check()
        raise not_supported(self.refusal(), subpath="name")
