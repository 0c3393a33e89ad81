"""Pydantic's validation errors -> ConfigError details a person can act on: the config path
as written in the YAML, its line and column, and a plain message."""

from __future__ import annotations

import difflib
import re
import types
import typing
from typing import Any

from pydantic import BaseModel, Tag

from shipyard.common.config._base import BAD_TAG, INVALID, NOT_SUPPORTED, TAGGED_UNIONS, describe
from shipyard.common.config.loader import PathKey, Positions

_EXPECTED = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "string_type": "a string",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "list_type": "a list",
    "finite_number": "a finite number",
}
_BOUNDS = {
    "greater_than_equal": ("ge", "must be at least {}"),
    "greater_than": ("gt", "must be greater than {}"),
    "less_than_equal": ("le", "must be at most {}"),
    "less_than": ("lt", "must be less than {}"),
}


def path_text(path: PathKey) -> str:
    """("bind_mounts", 0, "host_path") -> "bind_mounts[0].host_path"."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _subpath(text: str | None) -> PathKey:
    if not text:
        return ()
    return tuple(int(p) if p.isdigit() else p for p in re.findall(r"[^.\[\]]+", text))


def data_path(loc: tuple, data: Any, *, keep_last: bool = False) -> PathKey:
    """Pydantic's loc also names union members ("random", "nested map"); keep only the
    steps that exist in the data, so the path reads as the YAML does."""
    path: list[str | int] = []
    current = data
    for i, step in enumerate(loc):
        if isinstance(current, dict) and step in current:
            current = current[step]
        elif isinstance(current, list) and isinstance(step, int) and 0 <= step < len(current):
            current = current[step]
        elif keep_last and i == len(loc) - 1:
            pass
        else:
            continue
        path.append(step)
    return tuple(path)


def _unwrap(tp: Any) -> Any:
    """Strip Annotated and Optional."""
    while True:
        if typing.get_origin(tp) is typing.Annotated:
            tp = typing.get_args(tp)[0]
            continue
        if typing.get_origin(tp) in (typing.Union, types.UnionType):
            members = [a for a in typing.get_args(tp) if a is not type(None)]
            if len(members) == 1:
                tp = members[0]
                continue
        return tp


def _step(tp: Any, step: Any) -> Any:
    tp = _unwrap(tp)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        info = tp.model_fields.get(step) if isinstance(step, str) else None
        if info is None:
            return tp  # a union tag or a wrapper key: stay on this model
        return (
            info.annotation
            if not info.metadata
            else typing.Annotated[info.annotation, *info.metadata]
        )
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        for member in typing.get_args(tp):
            tags = [m for m in getattr(member, "__metadata__", ()) if isinstance(m, Tag)]
            if tags and tags[0].tag == step:
                return member
        return None
    if origin is dict:
        return typing.get_args(tp)[1]
    if origin is list:
        return typing.get_args(tp)[0]
    return None


def field_names_at(root: type[BaseModel], loc: tuple) -> list[str]:
    """The field names of the model a loc points into (for "did you mean")."""
    tp: Any = root
    for step in loc:
        tp = _step(tp, step)
        if tp is None:
            return []
    tp = _unwrap(tp)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return list(tp.model_fields)
    return []


def _suggest(word: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _message(err: dict, root: type[BaseModel]) -> str:
    kind, ctx, value = err["type"], err.get("ctx") or {}, err.get("input")
    if "[key]" in err["loc"]:  # a mapping key of the wrong type (YAML `2: x`)
        return f"keys here must be strings, got {describe(value)}"
    if kind in (INVALID, NOT_SUPPORTED):
        return ctx["message"]
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        key = str(err["loc"][-1])
        return f"unknown field {key!r}" + _suggest(key, field_names_at(root, err["loc"][:-1]))
    if kind in _EXPECTED:
        return f"expected {_EXPECTED[kind]}, got {describe(value)}"
    if kind == "literal_error":
        return f"expected {ctx['expected']}, got {describe(value)}"
    if kind in _BOUNDS:
        name, template = _BOUNDS[kind]
        return template.format(ctx[name]) + f", got {describe(value)}"
    if kind in ("string_too_short", "too_short"):
        return "must not be empty"
    return err["msg"][:1].lower() + err["msg"][1:]


def _tag_problem(err: dict, base: PathKey) -> tuple[PathKey, str]:
    """A union keyed by `type` or `name` got an unknown or missing key."""
    value = err.get("input")
    if not isinstance(value, dict):
        return base, f"expected a mapping, got {describe(value)}"
    key, choices = TAGGED_UNIONS[err["msg"]]
    if key not in value:
        return (*base, key), "required field is missing"
    got = value[key]
    suggestion = _suggest(got, list(choices)) if isinstance(got, str) else ""
    message = f"{err['msg']} {describe(got)}; expected one of {', '.join(choices)}{suggestion}"
    return (*base, key), message


def to_details(
    errors: list[dict], data: dict, positions: Positions, root: type[BaseModel]
) -> list[dict]:
    details: list[dict] = []
    for err in errors:
        kind = err["type"]
        path = data_path(err["loc"], data, keep_last=kind in ("missing", "extra_forbidden"))
        if kind == BAD_TAG:
            path, message = _tag_problem(err, path)
        else:
            path = (*path, *_subpath((err.get("ctx") or {}).get("subpath")))
            message = _message(err, root)
        line, column = positions.of(path, key=kind == "extra_forbidden")
        details.append(
            {
                "path": path_text(path),
                "message": message,
                "line": line,
                "column": column,
                "not_supported_yet": kind == NOT_SUPPORTED,
            }
        )
    return details
