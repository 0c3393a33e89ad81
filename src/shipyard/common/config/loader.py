"""YAML text -> plain data plus the line and column of every value, so an error about
`searcher.max_trials` can point at its line. The only I/O of the package is read_text."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from shipyard.common.errors import ConfigError

PathKey = tuple[str | int, ...]


class _Loader(yaml.SafeLoader):
    """SafeLoader that also reads `1e-4` as a number (YAML 1.2, as Determined's CLI does);
    PyYAML's YAML 1.1 rules would make it the string "1e-4"."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?([0-9][0-9_]*(\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)


@dataclass
class Positions:
    """1-based (line, column) of each value, and of each mapping key, by path."""

    values: dict[PathKey, tuple[int, int]] = field(default_factory=dict)
    keys: dict[PathKey, tuple[int, int]] = field(default_factory=dict)

    def of(self, path: PathKey, *, key: bool = False) -> tuple[int | None, int | None]:
        """The closest known position: the path itself, else its nearest parent."""
        if key and path in self.keys:
            return self.keys[path]
        for end in range(len(path), -1, -1):
            if path[:end] in self.values:
                return self.values[path[:end]]
        return None, None


def _mark(node: yaml.Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


def _index(
    loader: _Loader, node: yaml.Node, path: PathKey, pos: Positions, dupes: list[dict]
) -> None:
    pos.values[path] = _mark(node)
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, tuple[int, int]] = {}
        for key_node, value_node in node.value:
            # Merge keys (`<<: *base`) are not fields; merged values fall back to the parent.
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag.endswith(":merge"):
                continue
            key = loader.construct_object(key_node)
            line, column = _mark(key_node)
            if key in seen:
                dupes.append(
                    _detail(
                        ".".join(map(str, (*path, key))),
                        f"duplicate key {key!r} (first given on line {seen[key][0]})",
                        line,
                        column,
                    )
                )
            seen[key] = (line, column)
            pos.keys[(*path, key)] = (line, column)
            _index(loader, value_node, (*path, key), pos, dupes)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _index(loader, item, (*path, i), pos, dupes)


def _detail(path: str, message: str, line: int | None, column: int | None) -> dict:
    return {"path": path, "message": message, "line": line, "column": column}


def _compose(text: str) -> tuple[Any, Positions, list[dict]]:
    """The document, the positions of its values and its duplicate keys; a YAMLError if
    the text is not YAML (a control character is refused as the loader is made)."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        positions, dupes = Positions(), list[dict]()
        if node is None:
            return None, positions, dupes
        # Index before constructing: construction flattens merge keys in place.
        _index(loader, node, (), positions, dupes)
        return loader.construct_document(node), positions, dupes
    finally:
        loader.dispose()


def parse_yaml(text: str, filename: str) -> tuple[dict, Positions]:
    """The top-level mapping and the positions of its values; ConfigError otherwise."""
    try:
        data, positions, dupes = _compose(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "invalid YAML"
        if exc.context and exc.problem:
            problem = f"{problem} ({exc.context})"
        line, column = (mark.line + 1, mark.column + 1) if mark else (None, None)
        raise ConfigError(
            f"{filename} is not valid YAML: {problem} at line {line}, column {column}",
            [_detail("", problem, line, column)],
        ) from None
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow
        line = text.count("\n", 0, exc.position) + 1
        column = exc.position - text.rfind("\n", 0, exc.position)
        problem = f"character #x{exc.character:04x} is not allowed in YAML"
        raise ConfigError(
            f"{filename} is not valid YAML: {problem} at line {line}, column {column}",
            [_detail("", problem, line, column)],
        ) from None
    except yaml.YAMLError as exc:
        raise ConfigError(
            f"{filename} is not valid YAML: {exc}", [_detail("", str(exc), None, None)]
        ) from None
    if data is None:
        raise ConfigError(
            f"{filename} is empty; an experiment config needs at least entrypoint and searcher",
            [_detail("", "the config is empty", None, None)],
        )
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else f"the value {data!r}"
        message = f"the top level must be a mapping of fields like 'entrypoint: ...', got {kind}"
        raise ConfigError(f"{filename}: {message}", [_detail("", message, 1, 1)])
    if dupes:
        raise ConfigError(f"{filename} has duplicate keys", dupes)
    return data, positions


def read_config_text(path: str | Path) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file {str(path)!r} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {str(path)!r}: {exc}") from None
