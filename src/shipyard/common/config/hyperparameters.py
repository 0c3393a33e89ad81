"""Hyperparameters in Determined's forms, and their normalized JSON shape for the searchers
(docs/architecture.md, "Hyperparameter space")."""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Tag, field_validator, model_validator

from shipyard.common.config._base import StrictModel, invalid, tag_discriminator

HP_TYPES = ("const", "int", "double", "log", "categorical")
# Union member used for a bare scalar or list (`batch_size: 32`) and for a nested map.
_BARE = "bare value"
_NESTED = "nested map"


class ConstHP(StrictModel):
    keep_nulls = True  # `val: null` is a value
    type: Literal["const"] = "const"
    val: Any

    def space(self) -> dict:
        return {"type": "const", "val": self.val}

    def grid_points(self) -> int:
        return 1


class _RangeHP(StrictModel):
    # 0 passes here so that parse.py can say "the grid is empty" when the searcher is grid.
    count: int | None = None

    @field_validator("count")
    @classmethod
    def _count_not_negative(cls, value: int | None) -> int | None:
        if value is not None and value < 0:
            raise invalid(f"must be at least 1, got {value}")
        return value

    @model_validator(mode="after")
    def _check_bounds(self) -> _RangeHP:
        low, high = self.minval, self.maxval  # type: ignore[attr-defined]
        if low > high:
            raise invalid(f"maxval ({high}) is smaller than minval ({low})", subpath="maxval")
        return self

    def space(self) -> dict:
        out = {"type": self.type, "minval": self.minval, "maxval": self.maxval}  # type: ignore[attr-defined]
        if isinstance(self, LogHP):
            out["base"] = self.base
        out["count"] = self.count
        return out


class IntHP(_RangeHP):
    type: Literal["int"]
    minval: int
    maxval: int

    def grid_points(self) -> int:
        every = self.maxval - self.minval + 1
        return every if self.count is None else min(self.count, every)


class DoubleHP(_RangeHP):
    type: Literal["double"]
    minval: float
    maxval: float

    @field_validator("minval", "maxval")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise invalid(f"expected a finite number, got {value}")
        return value

    def grid_points(self) -> int:
        return self.count or 0


class LogHP(DoubleHP):
    """minval and maxval are exponents of `base`: the values are base**minval..base**maxval."""

    type: Literal["log"]  # type: ignore[assignment]
    base: float = 10.0

    @field_validator("base")
    @classmethod
    def _usable_base(cls, value: float) -> float:
        if value <= 0 or value == 1:
            raise invalid(f"base must be positive and not 1, got {value}")
        return value


class CategoricalHP(StrictModel):
    type: Literal["categorical"]
    vals: list[Any]

    def space(self) -> dict:
        return {"type": "categorical", "vals": list(self.vals)}

    def grid_points(self) -> int:
        return len(self.vals)


class NestedHP(StrictModel):
    """A map without a `type` key: a group of hyperparameters (type "object")."""

    vals: dict[str, Hyperparameter]

    def space(self) -> dict:
        return {"type": "object", "vals": {k: v.space() for k, v in self.vals.items()}}

    def grid_points(self) -> int:
        return math.prod(v.grid_points() for v in self.vals.values())


def _hp_kind(raw: Any) -> str | None:
    if isinstance(raw, dict):
        if "type" not in raw:
            return _NESTED
        kind = raw["type"]
        return kind if kind in HP_TYPES else None
    if isinstance(raw, StrictModel):  # already validated (model_copy and friends)
        return _NESTED if isinstance(raw, NestedHP) else getattr(raw, "type", None)
    return _BARE


def _wrap_bare(raw: Any) -> Any:
    return raw if isinstance(raw, ConstHP) else {"type": "const", "val": raw}


def _wrap_nested(raw: Any) -> Any:
    return raw if isinstance(raw, NestedHP) else {"vals": raw}


Hyperparameter = Annotated[
    Annotated[ConstHP, Tag("const")]
    | Annotated[IntHP, Tag("int")]
    | Annotated[DoubleHP, Tag("double")]
    | Annotated[LogHP, Tag("log")]
    | Annotated[CategoricalHP, Tag("categorical")]
    | Annotated[ConstHP, BeforeValidator(_wrap_bare), Tag(_BARE)]
    | Annotated[NestedHP, BeforeValidator(_wrap_nested), Tag(_NESTED)],
    tag_discriminator("unknown hyperparameter type", "type", HP_TYPES, _hp_kind),
]


NestedHP.model_rebuild()


def space_of(hps: dict[str, Any]) -> dict:
    return {name: hp.space() for name, hp in hps.items()}


def leaves(hps: dict[str, Any], prefix: str = "hyperparameters") -> list[tuple[str, Any]]:
    """Every non-nested hyperparameter with its config path, for checks that need them all."""
    out: list[tuple[str, Any]] = []
    for name, hp in hps.items():
        path = f"{prefix}.{name}"
        if isinstance(hp, NestedHP):
            out.extend(leaves(hp.vals, path))
        else:
            out.append((path, hp))
    return out
