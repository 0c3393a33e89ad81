"""Changes to a config as written: `--config key=value` overrides (dotted paths, values read
as YAML, as Determined's CLI reads them) and a partial config merged over a whole one.

Both work on the plain mapping a YAML file holds, before validation: the result is
validated as any config is, so a bad value is reported with its field path.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

import yaml

from shipyard.common.config.loader import _Loader, parse_yaml
from shipyard.common.errors import ConfigError, InvalidRequest


def parse_value(text: str) -> Any:
    """A value as YAML reads it (1e-4 a number, as in a config file); a,b is a list of two
    unless it is a flow list or mapping ([a, b], {k: v})."""
    try:
        if not text.startswith(("[", "{")) and "," in text:
            return [yaml.load(part, Loader=_Loader) for part in text.split(",")]  # noqa: S506
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader
    except yaml.YAMLError as exc:
        raise InvalidRequest(f"value {text!r} is not valid YAML: {exc}") from None


def parse_override(text: str) -> tuple[str, Any]:
    """'a.b=VALUE' -> ("a.b", value)."""
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise InvalidRequest(
            f"--config {text!r}: expected KEY=VALUE, e.g. hyperparameters.lr=0.1",
            [{"path": key or text, "message": "expected KEY=VALUE"}],
        )
    _check_path(key)
    return key, parse_value(value)


def parse_overrides(texts: Iterable[str]) -> dict[str, Any]:
    """Several KEY=VALUE strings in order (a later one for the same key wins)."""
    return dict(parse_override(text) for text in texts)


def _check_path(key: str) -> list[str]:
    parts = key.split(".")
    if any(not part.strip() for part in parts):
        raise InvalidRequest(
            f"--config {key!r}: an empty name in the dotted path",
            [{"path": key, "message": "a dotted path of field names, e.g. resources.slots"}],
        )
    return [part.strip() for part in parts]


def apply_overrides(config: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `config` with each dotted path set to its value; the sections on the way
    are made if missing. A path through a value that is not a section is an error naming
    the key."""
    result = copy.deepcopy(dict(config))
    for key, value in overrides.items():
        parts = _check_path(key)
        node: dict[str, Any] = result
        for depth, part in enumerate(parts[:-1]):
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            if not isinstance(child, dict):
                where = ".".join(parts[: depth + 1])
                raise ConfigError(
                    f"cannot set {key}: {where} is {_kind(child)}, not a section",
                    [{"path": key, "message": f"{where} is {_kind(child)}, not a section"}],
                )
            node = child
        node[parts[-1]] = copy.deepcopy(value)
    return result


def merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """`over` merged into `base`: mappings key by key, any other value replaced."""
    result = copy.deepcopy(dict(base))
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(result.get(key), Mapping):
            result[key] = merge(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    return f"the value {value!r}"


def parse_mapping(text: str, filename: str) -> dict[str, Any]:
    """A config file's top-level mapping (ConfigError with the line when it is not one)."""
    data, _positions = parse_yaml(text, filename)
    return data


def dump(config: Mapping[str, Any]) -> str:
    """The config as YAML text, its keys in their order (comments are not kept)."""
    return yaml.safe_dump(dict(config), sort_keys=False, allow_unicode=True)


def overridden_text(
    text: str, filename: str, overrides: Mapping[str, Any], merged: Mapping[str, Any] | None = None
) -> str:
    """The config text with `merged` merged over it, then `overrides` set; the text itself
    when there is nothing to change (its comments kept)."""
    if not overrides and not merged:
        return text
    data = parse_mapping(text, filename)
    if merged:
        data = merge(data, merged)
    return dump(apply_overrides(data, overrides))
