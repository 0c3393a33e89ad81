"""Rules that need two sections together: the searcher and the hyperparameters.
Each returns (path, message) pairs; parse.py reports them like the models' own."""

from __future__ import annotations

import math

from shipyard.common.config.entrypoint import LAUNCHER_PACKAGE, launcher_of
from shipyard.common.config.experiment import ExperimentConfig
from shipyard.common.config.hyperparameters import (
    CategoricalHP,
    ConstHP,
    DoubleHP,
    LogHP,
    leaves,
)
from shipyard.common.config.searcher import GridSearcher, OptunaSearcher

Problem = tuple[str, str]


def space_problems(cfg: ExperimentConfig) -> list[Problem]:
    problems = _grid_problems(cfg) + _zero_slot_problems(cfg)
    if isinstance(cfg.searcher, OptunaSearcher):
        problems += _optuna_problems(cfg)
    return problems


def _grid_problems(cfg: ExperimentConfig) -> list[Problem]:
    """Empty hyperparameters, and (for grid) the counts a grid needs."""
    grid = isinstance(cfg.searcher, GridSearcher)
    problems: list[Problem] = []
    for path, hp in leaves(cfg.hyperparameters):
        if isinstance(hp, CategoricalHP) and not hp.vals:
            what = "hyperparameter space for grid is empty: " if grid else ""
            problems.append((f"{path}.vals", f"{what}{path} has no values"))
        elif getattr(hp, "count", None) == 0:
            what = "hyperparameter space for grid is empty: " if grid else ""
            problems.append((f"{path}.count", f"{what}{path} has count 0; it must be at least 1"))
        elif grid and isinstance(hp, DoubleHP) and hp.count is None:
            problems.append(
                (f"{path}.count", f"grid search needs a count for {hp.type} hyperparameter {path}")
            )
    return problems


def _zero_slot_problems(cfg: ExperimentConfig) -> list[Problem]:
    """A launcher starts one rank per slot: with none it would fail in every trial."""
    launcher = launcher_of(cfg.entrypoint_argv())
    if cfg.resources.slots_per_trial or launcher is None:
        return []
    return [
        (
            "resources.slots_per_trial",
            f"the entrypoint starts {LAUNCHER_PACKAGE}{launcher[0]}, which runs one rank per "
            "slot: give at least 1 slot, or run the script without the launcher for a "
            "CPU-only trial (slots_per_trial: 0)",
        )
    ]


def _power(base: float, exponent: float) -> float:
    try:
        return base**exponent
    except OverflowError:
        return math.inf


def _optuna_problems(cfg: ExperimentConfig) -> list[Problem]:
    """Optuna asks for each hyperparameter by its dotted name, and a log one as the range
    base**minval..base**maxval: both must exist as Optuna sees them."""
    problems: list[Problem] = []
    seen: set[str] = set()
    for path, hp in leaves(cfg.hyperparameters):
        if isinstance(hp, ConstHP):
            continue
        if path in seen:
            name = path.removeprefix("hyperparameters.")
            problems.append(
                (path, f"two hyperparameters have the Optuna name {name!r}; rename one")
            )
        seen.add(path)
        if isinstance(hp, LogHP):
            low, high = sorted((_power(hp.base, hp.minval), _power(hp.base, hp.maxval)))
            if not (0 < low and math.isfinite(high)):
                problems.append(
                    (
                        path,
                        f"base**minval and base**maxval must be positive floats, got {low}, {high}",
                    )
                )
    return problems
