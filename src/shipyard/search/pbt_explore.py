"""PBT's explore step: a child's hyperparameters from its parent's, and cheap point copies."""

from __future__ import annotations

import copy
import random
from typing import Any

from shipyard.search.sampling import sample_point


def explore_point(
    space: dict[str, Any],
    point: dict[str, Any],
    rng: random.Random,
    *,
    resample_probability: float,
    perturb_factor: float,
) -> dict[str, Any]:
    """A copy of `point` with each hyperparameter explored, in space order.

    Numbers: resampled from their spec with resample_probability, else multiplied by
    1 + perturb_factor or 1 - perturb_factor (a coin flip) and clipped to the range (ints
    rounded; logs in value space). Categoricals: resampled with resample_probability, else
    kept. Consts: kept.
    """
    explored: dict[str, Any] = {}
    for name, spec in space.items():
        kind = spec["type"]
        value = point.get(name)
        if kind == "object":
            explored[name] = explore_point(
                spec["vals"],
                value if isinstance(value, dict) else {},
                rng,
                resample_probability=resample_probability,
                perturb_factor=perturb_factor,
            )
        elif kind == "const":
            explored[name] = copy.deepcopy(spec["val"])
        elif rng.random() < resample_probability or value is None:
            explored[name] = sample_point({name: spec}, rng)[name]
        elif kind == "categorical":
            explored[name] = copy.deepcopy(value)
        else:
            factor = 1 + perturb_factor if rng.random() < 0.5 else 1 - perturb_factor
            explored[name] = _perturbed(spec, value, factor)
    return explored


def _perturbed(spec: dict[str, Any], value: float, factor: float) -> int | float:
    kind = spec["type"]
    if kind == "log":
        base = float(spec.get("base", 10))
        low, high = sorted((base ** spec["minval"], base ** spec["maxval"]))
    else:
        low, high = spec["minval"], spec["maxval"]
    clipped = min(max(value * factor, low), high)
    return min(max(round(clipped), low), high) if kind == "int" else float(clipped)


def copy_point(point: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of a point, several times faster than copy.deepcopy: only lists and dicts
    can be shared, and a round makes hundreds of copies."""
    return {
        name: copy_point(value)
        if isinstance(value, dict)
        else copy.deepcopy(value)
        if isinstance(value, list)
        else value
        for name, value in point.items()
    }
