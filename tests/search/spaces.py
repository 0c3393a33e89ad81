"""Searcher configs and spaces shared by the search tests (plain dicts, as the config gives)."""

from __future__ import annotations

from typing import Any


def searcher_config(name: str | None, **fields: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "name": name,
        "metric": "loss",
        "smaller_is_better": True,
        "max_trials": None,
        "max_concurrent_trials": 0,
        "max_length": 100,
    }
    config.update(fields)
    return config


# Every type once, as docs/architecture.md shows the normalized space.
EVERY_TYPE: dict[str, Any] = {
    "lr": {"type": "log", "minval": -4, "maxval": -1, "base": 10, "count": 3},
    "bs": {"type": "const", "val": 32},
    "layers": {"type": "int", "minval": 1, "maxval": 4, "count": None},
    "drop": {"type": "double", "minval": 0.1, "maxval": 0.5, "count": 2},
    "opt": {"type": "categorical", "vals": ["sgd", "adam"]},
    "arch": {
        "type": "object",
        "vals": {
            "width": {"type": "const", "val": 64},
            "depth": {"type": "int", "minval": 2, "maxval": 3, "count": None},
        },
    },
}
