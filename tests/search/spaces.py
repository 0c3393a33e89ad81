"""Searcher configs and spaces shared by the search tests: plain dicts, as the master stores
them (ExperimentConfig.searcher_dict() and hyperparameter_space()); a searcher is built from
the config model they validate into, as the server builds it."""

from __future__ import annotations

from typing import Any

from shipyard.common.config import searcher_from_json
from shipyard.common.config.searcher import RunnableSearcher
from shipyard.search import Searcher, make_searcher


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
    if config.get("time_metric") and config.get("max_time") is not None:
        config["max_length"] = None  # a config gives one length form, not both
    return config


def typed(section: dict[str, Any]) -> RunnableSearcher:
    """The validated searcher model (ConfigError as the config layer raises it)."""
    return searcher_from_json(section)


def build(section: dict[str, Any], space: dict[str, Any], seed: int) -> Searcher:
    return make_searcher(typed(section), space, seed)


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
