"""An experiment's stored config as the typed ExperimentConfig: the only way the server
reads it. The database keeps the normalized JSON a trial reads (ExperimentConfig.to_json_dict);
it is validated back once per experiment and per content, and cached, so scheduler passes,
launches and views pay a dict comparison, not a validation.

The content is the cache's key, not a version number: the resources update of a live
experiment (services/experiments.set_resources) writes a new dict, and the next read
validates it, whichever thread cached the old one."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from shipyard.common.config import ExperimentConfig, config_from_dict
from shipyard.common.config.searcher import section_of
from shipyard.common.errors import NotFound
from shipyard.server import orm

# The experiment list reads a few hundred experiments at once; a typed config is small.
_CACHE_SIZE = 4096


def _hyperparameter_as_written(stored: Any) -> Any:
    """The searchers' space writes a group as {type: object, vals}; the config, as a map."""
    if isinstance(stored, dict) and stored.get("type") == "object":
        return {name: _hyperparameter_as_written(hp) for name, hp in stored["vals"].items()}
    return stored


def from_stored(stored: dict[str, Any]) -> ExperimentConfig:
    """The config a stored (normalized) one came from. Keys a newer version added are
    absent from an older database's configs: the model's defaults fill them in."""
    data = dict(stored)
    if isinstance(data.get("searcher"), dict):
        data["searcher"] = section_of(data["searcher"])
    if isinstance(data.get("hyperparameters"), dict):
        data["hyperparameters"] = {
            name: _hyperparameter_as_written(hp) for name, hp in data["hyperparameters"].items()
        }
    return config_from_dict(data, "the stored experiment config")


class _Cache:
    """Experiment id -> (the stored dict, its typed config), least recently used dropped."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._entries: OrderedDict[int, tuple[dict, ExperimentConfig]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, experiment_id: int, stored: dict) -> ExperimentConfig:
        with self._lock:
            entry = self._entries.get(experiment_id)
            if entry is not None and (entry[0] is stored or entry[0] == stored):
                # The newest row's dict: the next read of that row is an identity check.
                self._entries[experiment_id] = (stored, entry[1])
                self._entries.move_to_end(experiment_id)
                return entry[1]
        typed = from_stored(stored)  # outside the lock: other experiments need not wait
        with self._lock:
            self._entries[experiment_id] = (stored, typed)
            self._entries.move_to_end(experiment_id)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)
        return typed


_cache = _Cache(_CACHE_SIZE)


def stored_config(experiment_id: int, stored: dict[str, Any]) -> ExperimentConfig:
    """For a query that selected the config column only."""
    return _cache.get(experiment_id, stored)


def config_by_id(experiment_id: int, *, session: Session) -> ExperimentConfig:
    """An experiment's config, reading only its config column (its searcher for the
    metrics hot path and the curve keeper, which cache what they take from it)."""
    stored = session.scalar(select(orm.Experiment.config).where(orm.Experiment.id == experiment_id))
    if stored is None:
        raise NotFound(f"experiment {experiment_id} does not exist")
    return stored_config(experiment_id, stored)


def config_of(exp: orm.Experiment) -> ExperimentConfig:
    return _cache.get(exp.id, exp.config)
