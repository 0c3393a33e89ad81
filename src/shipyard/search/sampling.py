"""The normalized hyperparameter space: sampling a point, enumerating a grid.

The space has the shape docs/architecture.md gives (types const, int, double, log,
categorical, object), as ExperimentConfig.hyperparameter_space() gives it: already checked
by the config models (a grid's counts included); a point is the plain nested dict of values.
"""

from __future__ import annotations

import copy
import math
import random
from collections.abc import Sequence
from typing import Any

# One grid axis: where the value goes in the nested point, and the values it takes.
GridAxis = tuple[tuple[str, ...], Sequence[Any]]


# --- sampling -----------------------------------------------------------------------------


def rng_for_trial(seed: int, index: int) -> random.Random:
    """A generator for one trial, derived from (seed, index) alone: a searcher's state then
    needs no generator state, and a resumed search draws exactly the points it would have.
    (String seeds are hashed with SHA-512, stable across Python versions.)"""
    return random.Random(f"shipyard/{seed}/{index}")


def sample_point(space: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """One point drawn at random."""
    return {name: _sample_value(spec, rng) for name, spec in space.items()}


def _sample_value(spec: dict[str, Any], rng: random.Random) -> Any:
    kind = spec["type"]
    if kind == "const":
        return copy.deepcopy(spec["val"])
    if kind == "object":
        return sample_point(spec["vals"], rng)
    if kind == "categorical":
        return copy.deepcopy(rng.choice(spec["vals"]))
    if kind == "int":
        return rng.randint(spec["minval"], spec["maxval"])
    if kind == "double":
        return rng.uniform(spec["minval"], spec["maxval"])
    # log: the exponent is uniform, so every order of magnitude is equally likely
    return float(spec.get("base", 10)) ** rng.uniform(spec["minval"], spec["maxval"])


# --- grid ---------------------------------------------------------------------------------


def grid_axes(space: dict[str, Any]) -> list[GridAxis]:
    """The axes of the grid in space order (nested objects flattened in place)."""
    axes: list[GridAxis] = []
    _collect_axes(space, (), axes)
    return axes


def _collect_axes(space: dict[str, Any], prefix: tuple[str, ...], axes: list[GridAxis]) -> None:
    for name, spec in space.items():
        key = (*prefix, name)
        if spec["type"] == "object" and spec["vals"]:
            _collect_axes(spec["vals"], key, axes)
            continue
        if spec["type"] == "object":  # an empty object still appears in the point
            axes.append((key, [{}]))
            continue
        axes.append((key, _axis_values(spec)))


def _axis_values(spec: dict[str, Any]) -> Sequence[Any]:
    kind = spec["type"]
    if kind == "const":
        return [spec["val"]]
    if kind == "categorical":
        return list(spec["vals"])
    low, high, count = spec["minval"], spec["maxval"], spec.get("count")
    if kind == "int":
        return int_grid(low, high, count)
    assert count is not None, "the config model requires a grid count for double and log"
    if kind == "double":
        return float_grid(low, high, count)
    base = float(spec.get("base", 10))
    return [base**exponent for exponent in float_grid(low, high, count)]


def int_grid(low: int, high: int, count: int | None) -> Sequence[int]:
    """count evenly spaced integers over [low, high], or every integer when count is None
    or at least the size of the range. A range object keeps a huge range cheap."""
    size = high - low + 1
    if count is None or count >= size:
        return range(low, high + 1)
    if count == 1:
        return [_round_half_away(low + (high - low) / 2)]
    values: list[int] = []
    for i in range(count):
        value = _round_half_away(low + (high - low) * i / (count - 1))
        if value not in values:
            values.append(value)
    return values


def float_grid(low: float, high: float, count: int) -> list[float]:
    """count evenly spaced points including both ends; a single point is the midpoint."""
    if count == 1:
        return [(low + high) / 2]
    # Interpolating this way makes the ends exactly low and high.
    return [low * (1 - i / (count - 1)) + high * (i / (count - 1)) for i in range(count)]


def _round_half_away(value: float) -> int:
    """Round half away from zero (as Determined's Go code does), not to even."""
    return int(math.copysign(math.floor(abs(value) + 0.5), value))


def grid_size(axes: list[GridAxis]) -> int:
    return math.prod(len(values) for _, values in axes)


def grid_point(axes: list[GridAxis], index: int) -> dict[str, Any]:
    """The index-th point of the Cartesian product, in itertools.product order
    (the first hyperparameter varies slowest)."""
    if not 0 <= index < grid_size(axes):
        raise IndexError(f"grid point {index} is outside a grid of {grid_size(axes)} points")
    positions: list[int] = []
    for _, values in reversed(axes):
        index, position = divmod(index, len(values))
        positions.append(position)
    point: dict[str, Any] = {}
    for (key, values), position in zip(axes, reversed(positions), strict=True):
        node = point
        for part in key[:-1]:
            node = node.setdefault(part, {})
        node[key[-1]] = copy.deepcopy(values[position])
    return point
