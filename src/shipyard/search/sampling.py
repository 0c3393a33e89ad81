"""The normalized hyperparameter space: checking it, sampling a point, enumerating a grid.

The space has the shape docs/architecture.md gives (types const, int, double, log,
categorical, object); a point is the plain nested dict of values.
"""

from __future__ import annotations

import copy
import math
import random
from collections.abc import Sequence
from typing import Any

from shipyard.common.errors import ConfigError

HPARAM_TYPES = ("const", "int", "double", "log", "categorical", "object")
_ROOT = "hyperparameters"

# One grid axis: where the value goes in the nested point, and the values it takes.
GridAxis = tuple[tuple[str, ...], Sequence[Any]]


def _config_error(path: str, message: str) -> ConfigError:
    return ConfigError(f"{path}: {message}", details=[{"path": path, "message": message}])


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def validate_space(space: Any, path: str = _ROOT) -> None:
    """Raise ConfigError naming the first hyperparameter whose spec is malformed."""
    if not isinstance(space, dict):
        raise _config_error(path, f"expected a mapping of hyperparameters, got {space!r}")
    for name, spec in space.items():
        _validate_spec(spec, f"{path}.{name}")


def _validate_spec(spec: Any, path: str) -> None:
    if not isinstance(spec, dict) or spec.get("type") not in HPARAM_TYPES:
        raise _config_error(path, f"expected a spec with type one of {HPARAM_TYPES}, got {spec!r}")
    kind = spec["type"]
    if kind == "const":
        if "val" not in spec:
            raise _config_error(path, "a const hyperparameter needs 'val'")
    elif kind == "object":
        validate_space(spec.get("vals"), path)
    elif kind == "categorical":
        vals = spec.get("vals")
        if not isinstance(vals, list) or not vals:
            raise _config_error(path, f"a categorical needs a non-empty list 'vals', got {vals!r}")
    else:
        _validate_range(spec, kind, path)


def _validate_range(spec: dict[str, Any], kind: str, path: str) -> None:
    is_bound = _is_int if kind == "int" else _is_number
    low: Any = spec.get("minval")
    high: Any = spec.get("maxval")
    if not (is_bound(low) and is_bound(high)):
        expected = "integers" if kind == "int" else "numbers"
        raise _config_error(path, f"minval and maxval must be {expected}, got {low!r}, {high!r}")
    if low > high:
        raise _config_error(path, f"minval {low} is greater than maxval {high}")
    count = spec.get("count")
    if count is not None and not (_is_int(count) and count >= 0):
        raise _config_error(path, f"count must be a non-negative integer, got {count!r}")
    base = spec.get("base", 10)
    if kind == "log" and not (_is_number(base) and base > 0):
        raise _config_error(path, f"base must be a positive number, got {base!r}")


# --- sampling -----------------------------------------------------------------------------


def rng_for_trial(seed: int, index: int) -> random.Random:
    """A generator for one trial, derived from (seed, index) alone: a searcher's state then
    needs no generator state, and a resumed search draws exactly the points it would have.
    (String seeds are hashed with SHA-512, stable across Python versions.)"""
    return random.Random(f"shipyard/{seed}/{index}")


def sample_point(space: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """One point drawn at random; the space must have passed validate_space."""
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
    """The axes of the grid in space order (nested objects flattened in place).

    Raises ConfigError naming the hyperparameter when an axis would be empty or has no count.
    """
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
        values = _axis_values(spec, ".".join((_ROOT, *key)))
        if len(values) == 0:
            raise _config_error(".".join((_ROOT, *key)), "the grid has no value for it (count 0)")
        axes.append((key, values))


def _axis_values(spec: dict[str, Any], path: str) -> Sequence[Any]:
    kind = spec["type"]
    if kind == "const":
        return [spec["val"]]
    if kind == "categorical":
        return list(spec["vals"])
    low, high, count = spec["minval"], spec["maxval"], spec.get("count")
    if kind == "int":
        return int_grid(low, high, count)
    if count is None:
        raise _config_error(path, f"grid search needs a 'count' for a {kind} hyperparameter")
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
