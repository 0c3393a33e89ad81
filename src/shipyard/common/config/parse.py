"""The entry points: text or file -> ExperimentConfig, every problem reported at once."""

from __future__ import annotations

import posixpath
from pathlib import Path
from typing import Any, NoReturn

from pydantic import TypeAdapter, ValidationError

from shipyard.common.config.cross_checks import space_problems
from shipyard.common.config.experiment import ExperimentConfig
from shipyard.common.config.loader import Positions, parse_yaml, read_config_text
from shipyard.common.config.problems import path_text, to_details
from shipyard.common.config.searcher import RunnableSearcher, SearcherConfig, section_of
from shipyard.common.errors import ConfigError, NotSupportedYet

_NOT_SUPPORTED = "not_supported_yet"


def _position_of(positions: Positions, path: str) -> tuple[int | None, int | None]:
    parts = tuple(path.split("."))
    return positions.of(parts)


def _raise(details: list[dict], filename: str | None) -> NoReturn:
    # NotSupportedYet only when nothing else is wrong: a real error must be fixed anyway.
    only_unsupported = all([d.pop(_NOT_SUPPORTED, False) for d in details])
    what = filename or "the searcher section"  # None: searcher_from_json's section alone
    if len(details) == 1:
        where = f"{filename}: " if filename else ""
        message = f"{where}{details[0]['path'] or '<config>'}: {details[0]['message']}"
    elif only_unsupported:
        message = f"{what} uses {len(details)} settings that are not supported yet"
    else:
        message = f"{what} has {len(details)} problems"
    raise (NotSupportedYet if only_unsupported else ConfigError)(message, details)


def _validate(data: dict, positions: Positions, filename: str) -> ExperimentConfig:
    try:
        cfg = ExperimentConfig.model_validate(data)
    except ValidationError as exc:
        errors: list[Any] = exc.errors(include_url=False)
        _raise(to_details(errors, data, positions, ExperimentConfig), filename)
    problems = space_problems(cfg)
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


_SEARCHER = TypeAdapter(SearcherConfig)


def searcher_from_json(stored: dict) -> RunnableSearcher:
    """The typed searcher section from its stored form (ExperimentConfig.searcher_dict(), as
    the master keeps it in the database) or as written in a config. ConfigError as for the
    whole config, paths under "searcher"; the message is "path: message" for one problem."""
    section = section_of(stored)
    try:
        # The parsed-only searchers refuse themselves in validation: what passes can run.
        searcher: RunnableSearcher = _SEARCHER.validate_python(section)  # type: ignore[assignment]
    except ValidationError as exc:
        errors: list[Any] = exc.errors(include_url=False)
        for err in errors:
            err["loc"] = ("searcher", *err["loc"])
        _raise(to_details(errors, {"searcher": section}, Positions(), ExperimentConfig), None)
    return searcher


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
