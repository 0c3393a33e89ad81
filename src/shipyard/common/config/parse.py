"""The entry points: text or file -> ExperimentConfig, every problem reported at once."""

from __future__ import annotations

import posixpath
from pathlib import Path
from typing import Any, NoReturn

from pydantic import ValidationError

from shipyard.common.config.experiment import ExperimentConfig
from shipyard.common.config.hyperparameters import CategoricalHP, DoubleHP, leaves
from shipyard.common.config.loader import Positions, parse_yaml, read_config_text
from shipyard.common.config.problems import path_text, to_details
from shipyard.common.config.searcher import GridSearcher
from shipyard.common.errors import ConfigError, NotSupportedYet

_NOT_SUPPORTED = "not_supported_yet"


def _space_problems(cfg: ExperimentConfig) -> list[tuple[str, str]]:
    """Checks that need the searcher and the hyperparameters together."""
    grid = isinstance(cfg.searcher, GridSearcher)
    problems: list[tuple[str, str]] = []
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


def _position_of(positions: Positions, path: str) -> tuple[int | None, int | None]:
    parts = tuple(path.split("."))
    return positions.of(parts)


def _raise(details: list[dict], filename: str) -> NoReturn:
    # NotSupportedYet only when nothing else is wrong: a real error must be fixed anyway.
    only_unsupported = all([d.pop(_NOT_SUPPORTED, False) for d in details])
    if len(details) == 1:
        message = f"{filename}: {details[0]['path'] or '<config>'}: {details[0]['message']}"
    elif only_unsupported:
        message = f"{filename} uses {len(details)} settings that are not supported yet"
    else:
        message = f"{filename} has {len(details)} problems"
    raise (NotSupportedYet if only_unsupported else ConfigError)(message, details)


def _validate(data: dict, positions: Positions, filename: str) -> ExperimentConfig:
    try:
        cfg = ExperimentConfig.model_validate(data)
    except ValidationError as exc:
        errors: list[Any] = exc.errors(include_url=False)
        _raise(to_details(errors, data, positions, ExperimentConfig), filename)
    problems = _space_problems(cfg)
    if problems:
        details = []
        for path, message in problems:
            line, column = _position_of(positions, path)
            details.append({"path": path, "message": message, "line": line, "column": column})
        _raise(details, filename)
    cfg._positions = positions
    return cfg


def load_config(text: str, filename: str = "config.yaml") -> ExperimentConfig:
    """Parse and validate a YAML experiment config; ConfigError lists every problem."""
    data, positions = parse_yaml(text, filename)
    return _validate(data, positions, filename)


def load_config_file(path: str | Path) -> ExperimentConfig:
    return load_config(read_config_text(path), Path(path).name)


def config_from_dict(data: dict, filename: str = "<config>") -> ExperimentConfig:
    """For callers that build the config in Python (the SDK); no line numbers."""
    if not isinstance(data, dict):
        raise ConfigError(f"{filename}: the config must be a mapping, got {type(data).__name__}")
    return _validate(data, Positions(), filename)


def validate_context(cfg: ExperimentConfig, files: set[str]) -> None:
    """Refuse an entrypoint whose script is not among the context's relative file paths."""
    script = cfg.entrypoint_script()
    if script is None:
        return
    normalized = {posixpath.normpath(f) for f in files}
    if script in normalized:
        return
    where = "the uploaded context is empty" if not files else "it is not in the uploaded context"
    message = f"the entrypoint runs {script!r}, but {where}"
    line, column = cfg.position(("entrypoint",))
    raise ConfigError(
        message,
        [{"path": path_text(("entrypoint",)), "message": message, "line": line, "column": column}],
    )
