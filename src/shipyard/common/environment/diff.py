"""What differs between two runs: their code, hyperparameters, config, environment (the
sections of their captures, never the volatile part, the errors or the timing) and image,
as a list of Difference in a fixed order of categories.

A run record: {"code": {git record, "context_id"}, "hyperparameters": {...}, "config":
{...}, "environment": capture record, "image": {"image", "digest"}}. A category that one of
the two records lacks (its key missing or None: an environment that was not captured, a
section an older capture did not have) is not compared, rather than shown as all added or
all removed; missing_sections(a, b) names those categories, so a caller can say so.

Section hashes are computed here from the content, never taken from the records: a stored
hash could be stale, and hashing a section costs less than comparing it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from shipyard.common.environment.canonical import section_hash

CATEGORIES = (
    "code",
    "hyperparameters",
    "config",
    "packages",
    "framework",
    "gpu",
    "cpu",
    "python",
    "os",
    "image",
    "env",
)
ENVIRONMENT_CATEGORIES = frozenset({"packages", "framework", "gpu", "cpu", "python", "os", "env"})
# The git record's keys that tell what code ran, and their items in a difference.
CODE_ITEMS = (
    ("commit", "commit"),
    ("branch", "branch"),
    ("remote", "remote"),
    ("dirty", "dirty"),
    ("diff_sha256", "diff"),
    ("context_id", "snapshot"),
    ("unpushed", "unpushed"),
)
# Hyperparameters are their own category; a name, description and labels tell people what
# a run was, and don't change what runs.
CONFIG_LEFT_OUT = frozenset({"hyperparameters", "name", "description", "labels"})
REDACTED = "<redacted>"


@dataclass(frozen=True)
class Difference:
    category: str
    item: str
    change: str  # "added" (a is None), "removed" (b is None) or "changed"
    a: Any
    b: Any

    def to_json(self) -> dict[str, Any]:
        return {
            "category": self.category,
            "item": self.item,
            "change": self.change,
            "a": self.a,
            "b": self.b,
        }


def diff_runs(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Difference]:
    found: list[Difference] = []
    for category in CATEGORIES:
        left, right = _part(a, category), _part(b, category)
        if left is None or right is None:
            continue  # see missing_sections
        if category in ENVIRONMENT_CATEGORIES and section_hash(left) == section_hash(right):
            continue
        found += _COMPARE[category](category, left, right)
    return found


def missing_sections(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """The categories diff_runs did not compare: one record or both lack them."""
    return [c for c in CATEGORIES if _part(a, c) is None or _part(b, c) is None]


def _part(record: Mapping[str, Any], category: str) -> Mapping[str, Any] | None:
    if category in ENVIRONMENT_CATEGORIES:
        environment = record.get("environment")
        sections = environment.get("sections") if isinstance(environment, Mapping) else None
        part = sections.get(category) if isinstance(sections, Mapping) else None
    else:
        part = record.get(category)
    return part if isinstance(part, Mapping) else None


def _between(category: str, item: str, x: Any, y: Any) -> list[Difference]:
    if x == y:
        return []
    change = "added" if x is None else "removed" if y is None else "changed"
    return [Difference(category, item, change, x, y)]


def _each(category: str, x: Mapping[str, Any], y: Mapping[str, Any]) -> list[Difference]:
    """One difference per key of either mapping."""
    keys = sorted(set(x) | set(y))
    return [d for k in keys for d in _between(category, k, x.get(k), y.get(k))]


def _flat(value: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested mappings as dotted paths; lists and empty mappings are values."""
    out: dict[str, Any] = {}
    for key, inner in value.items():
        path = f"{prefix}{key}"
        if isinstance(inner, Mapping) and inner:
            out.update(_flat(inner, path + "."))
        else:
            out[path] = inner
    return out


def _flattened(category: str, x: Mapping[str, Any], y: Mapping[str, Any]) -> list[Difference]:
    return _each(category, _flat(x), _flat(y))


def _code(category: str, x: Mapping[str, Any], y: Mapping[str, Any]) -> list[Difference]:
    return [d for key, item in CODE_ITEMS for d in _between(category, item, x.get(key), y.get(key))]


def _config(category: str, x: Mapping[str, Any], y: Mapping[str, Any]) -> list[Difference]:
    def kept(config: Mapping[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in config.items() if k not in CONFIG_LEFT_OUT}

    return _flattened(category, kept(x), kept(y))


def _gpu(category: str, x: Mapping[str, Any], y: Mapping[str, Any]) -> list[Difference]:
    found = [
        d for k in ("driver", "cuda_driver") for d in _between(category, k, x.get(k), y.get(k))
    ]
    left, right = _list(x.get("devices")), _list(y.get("devices"))
    found += _between(category, "devices", len(left), len(right))
    for index, (one, other) in enumerate(zip(left, right, strict=False)):
        one, other = _mapping(one), _mapping(other)
        for key in sorted(set(one) | set(other)):
            found += _between(category, f"devices[{index}].{key}", one.get(key), other.get(key))
    return found


def _cpu(category: str, x: Mapping[str, Any], y: Mapping[str, Any]) -> list[Difference]:
    found = [
        d for k in ("model", "logical_cpus") for d in _between(category, k, x.get(k), y.get(k))
    ]
    left, right = set(_list(x.get("flags"))), set(_list(y.get("flags")))
    found += [Difference(category, f"flags.{f}", "added", None, f) for f in sorted(right - left)]
    found += [Difference(category, f"flags.{f}", "removed", f, None) for f in sorted(left - right)]
    return found


def _image(category: str, x: Mapping[str, Any], y: Mapping[str, Any]) -> list[Difference]:
    return [d for k in ("digest", "image") for d in _between(category, k, x.get(k), y.get(k))]


def _env(category: str, x: Mapping[str, Any], y: Mapping[str, Any]) -> list[Difference]:
    def values(section: Mapping[str, Any]) -> dict[str, Any]:
        # A hashed variable shows its hash; two redacted ones count as equal.
        return {
            **_mapping(section.get("hashed")),
            **_mapping(section.get("kept")),
            **{name: REDACTED for name in _list(section.get("redacted"))},
        }

    return _each(category, values(x), values(y))


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, Iterable) and not isinstance(value, str) else []


Comparer = Callable[[str, Mapping[str, Any], Mapping[str, Any]], list[Difference]]
_COMPARE: dict[str, Comparer] = {
    "code": _code,
    "hyperparameters": _flattened,
    "config": _config,
    "packages": _each,
    "framework": _flattened,
    "gpu": _gpu,
    "cpu": _cpu,
    "python": _flattened,
    "os": _flattened,
    "image": _image,
    "env": _env,
}
