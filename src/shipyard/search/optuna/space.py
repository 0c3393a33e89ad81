"""The hyperparameter space as Optuna sees it: dotted names, distributions, and back to the
plain nested hparams dict. The config models checked that every name and range exists
for Optuna (common/config/cross_checks.py)."""

from __future__ import annotations

import copy
from typing import Any


def flatten_space(space: dict[str, Any], prefix: str = "") -> dict[str, dict[str, Any]]:
    """The hyperparameters Optuna asks for, by dotted name (consts and objects left out),
    in space order."""
    flat: dict[str, dict[str, Any]] = {}
    for name, spec in space.items():
        dotted = f"{prefix}{name}"
        if spec["type"] == "const":
            continue
        if spec["type"] == "object":
            flat.update(flatten_space(spec["vals"], f"{dotted}."))
        else:
            flat[dotted] = spec
    return flat


def to_distributions(flat: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Optuna distributions for flatten_space's hyperparameters (needs Optuna)."""
    from optuna.distributions import (
        BaseDistribution,
        CategoricalDistribution,
        FloatDistribution,
        IntDistribution,
    )

    distributions: dict[str, BaseDistribution] = {}
    for name, spec in flat.items():
        kind = spec["type"]
        if kind == "int":
            distributions[name] = IntDistribution(spec["minval"], spec["maxval"])
        elif kind == "double":
            distributions[name] = FloatDistribution(spec["minval"], spec["maxval"])
        elif kind == "log":
            base = float(spec.get("base", 10))
            low, high = sorted((base ** spec["minval"], base ** spec["maxval"]))
            distributions[name] = FloatDistribution(low, high, log=True)
        else:  # categorical: the index of the value, so values may be anything JSON
            distributions[name] = CategoricalDistribution(list(range(len(spec["vals"]))))
    return distributions


def to_hparams(space: dict[str, Any], params: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """The plain nested hparams dict of one Optuna trial's params (by dotted name)."""
    point: dict[str, Any] = {}
    for name, spec in space.items():
        dotted = f"{prefix}{name}"
        kind = spec["type"]
        if kind == "const":
            point[name] = copy.deepcopy(spec["val"])
        elif kind == "object":
            point[name] = to_hparams(spec["vals"], params, f"{dotted}.")
        elif kind == "categorical":
            point[name] = copy.deepcopy(spec["vals"][int(params[dotted])])
        elif kind == "int":
            point[name] = int(params[dotted])
        else:
            point[name] = float(params[dotted])
    return point
