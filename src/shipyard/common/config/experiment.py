"""ExperimentConfig: the whole experiment config, Determined's top-level fields."""

from __future__ import annotations

import math
import posixpath
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, PrivateAttr, field_validator, model_validator

from shipyard.common.config import entrypoint as entry
from shipyard.common.config._base import Period, StrictModel, describe, invalid, not_supported
from shipyard.common.config.checkpoint import (
    CheckpointStorage,
    DefaultStorage,
    Retention,
    SharedFsStorage,
)
from shipyard.common.config.environment import BindMount, EnvironmentConfig
from shipyard.common.config.hyperparameters import Hyperparameter, space_of
from shipyard.common.config.ignored import IGNORED_DEFAULTS, check_ignored
from shipyard.common.config.loader import Positions
from shipyard.common.config.resources import ResourcesConfig
from shipyard.common.config.searcher import GridSearcher, SearcherConfig
from shipyard.common.config.secrets import Secrets


def _entrypoint_form(value: Any) -> Any:
    ok = isinstance(value, str) or (
        isinstance(value, list) and all(isinstance(a, str) for a in value)
    )
    if not ok:
        raise invalid(
            "expected a command string like 'python3 train.py' or a list of arguments, "
            f"got {describe(value)}"
        )
    return entry.check_entrypoint(value)


class Reproducibility(StrictModel):
    # None: the master picks a seed and records it; a fixed derived default would make every
    # experiment sample the same hyperparameters.
    experiment_seed: int | None = Field(default=None, ge=0)


class ExperimentConfig(StrictModel):
    name: str = "Experiment"
    description: str | None = None
    labels: list[str] = Field(default_factory=list)
    workspace: str = Field(default="Uncategorized", min_length=1)
    project: str = Field(default="Uncategorized", min_length=1)
    entrypoint: Annotated[str | list[str], BeforeValidator(_entrypoint_form)]
    hyperparameters: dict[str, Hyperparameter] = Field(default_factory=dict)
    searcher: SearcherConfig
    resources: ResourcesConfig = Field(default_factory=ResourcesConfig)
    environment: EnvironmentConfig = Field(default_factory=EnvironmentConfig)
    bind_mounts: list[BindMount] = Field(default_factory=list)
    checkpoint_storage: CheckpointStorage | None = None
    checkpoint_policy: Literal["best", "all", "none"] = "best"
    max_restarts: int = Field(default=5, ge=0)
    # Seconds a trial asked to give up its slots (preemption, pause) has to checkpoint and
    # exit before it is killed; unset: the master's default (an hour, as in Determined).
    preemption_timeout: int | None = Field(default=None, ge=1)
    # Shipyard's own (Determined has neither), in seconds. A run with no heartbeat for
    # heartbeat_timeout is killed and restarted; a trial that has run trial_time_limit in
    # all (over its runs) is stopped.
    heartbeat_timeout: int | None = Field(default=None, ge=1)
    trial_time_limit: int | None = Field(default=None, ge=1)
    min_validation_period: Period | None = None
    min_checkpoint_period: Period | None = None
    # Determined's: a PyTorchTrial (entrypoint model_def:MyTrial) validates before training.
    perform_initial_validation: bool = False
    data: dict[str, Any] = Field(default_factory=dict)
    reproducibility: Reproducibility = Field(default_factory=Reproducibility)
    records_per_epoch: int | None = Field(default=None, ge=0)
    # Shipyard's own: the workspace's secrets each run gets (config/secrets.py).
    secrets: Secrets = Field(default_factory=list)

    # Determined fields Shipyard does not act on: accepted only unset or at their defaults.
    profiling: Any = None
    optimizations: Any = None
    scheduling_unit: Any = None
    debug: Any = None
    log_policies: Any = None
    integrations: Any = None
    pbs: Any = None
    slurm: Any = None
    internal: Any = None
    security: Any = None
    tensorboard_storage: Any = None
    data_layer: Any = None
    log_retention_days: Any = None

    _positions: Positions = PrivateAttr(default_factory=Positions)

    @model_validator(mode="before")
    @classmethod
    def _trial_class_time(cls, data: Any) -> Any:
        """``entrypoint: model_def:MyTrial`` with the searcher's length in epochs or records
        (max_length, or pbt's length_per_round) counts it as Determined does: the trial's
        validations report that unit (``epochs``, ``records``), so the searcher's length
        becomes ``time_metric`` with ``max_time``. Else the master would compare it with
        steps_completed, which are batches."""
        if not isinstance(data, dict) or not isinstance(data.get("searcher"), dict):
            return data
        entrypoint, searcher = data.get("entrypoint"), data["searcher"]
        if not (isinstance(entrypoint, str) and entry.TRIAL_CLASS.match(entrypoint.strip())):
            return data
        if searcher.get("time_metric") is not None or searcher.get("max_time") is not None:
            return data
        pbt = searcher.get("name") == "pbt"
        length = searcher.get("length_per_round" if pbt else "max_length")
        if not (isinstance(length, dict) and len(length) == 1):
            return data
        ((unit, value),) = length.items()
        if unit not in ("epochs", "records") or type(value) is not int or value < 1:
            return data  # the searcher's own checks report anything else
        rewritten = {**searcher, "time_metric": unit}
        if not pbt:  # pbt's length_per_round counts the time_metric as it is
            del rewritten["max_length"]
            rewritten["max_time"] = value
        return {**data, "searcher": rewritten}

    @field_validator(*IGNORED_DEFAULTS)
    @classmethod
    def _ignored_at_default(cls, value: Any, info: Any) -> Any:
        return check_ignored(info.field_name, value)

    @field_validator("checkpoint_policy")
    @classmethod
    def _policy_best(cls, value: str) -> str:
        if value != "best":
            raise not_supported(
                f"checkpoint_policy {value!r} is not supported yet: with the Core API your "
                "script decides when to checkpoint; leave it at 'best'"
            )
        return value

    def hyperparameter_space(self) -> dict:
        """The normalized space a searcher receives (docs/architecture.md)."""
        return space_of(self.hyperparameters)

    def grid_size(self) -> int:
        """How many trials a grid search over this space creates (0 when it is empty)."""
        return math.prod(hp.grid_points() for hp in self.hyperparameters.values())

    def searcher_dict(self) -> dict:
        out = self.searcher.to_dict()
        if isinstance(self.searcher, GridSearcher):
            out["max_trials"] = self.grid_size()
        return out

    def entrypoint_argv(self) -> list[str]:
        return entry.argv(self.entrypoint)

    def entrypoint_script(self) -> str | None:
        """The context-relative script the entrypoint runs, or None (a module, a program)."""
        return entry.script_of(self.entrypoint_argv())

    def env_vars(self) -> dict[str, str]:
        return dict(self.environment.environment_variables)

    def checkpoint_base_path(self, default: str) -> str:
        """The absolute directory checkpoints go to; `default` when the config leaves it open."""
        storage = self.checkpoint_storage
        if storage is None or isinstance(storage, DefaultStorage):
            return default
        return storage.base_path()  # type: ignore[union-attr]

    def uses_default_storage(self) -> bool:
        """Whether checkpoints go to the master's default storage (no type given)."""
        return self.checkpoint_storage is None or isinstance(
            self.checkpoint_storage, DefaultStorage
        )

    def with_default_storage(self, host_path: str) -> ExperimentConfig:
        """Determined's merge: a checkpoint_storage without `type` (retention numbers only)
        becomes the master's default storage, shared_fs at `host_path`, with those numbers.
        Stored so, the config says where its checkpoints are."""
        storage = self.checkpoint_storage
        # A relative master home (SHIPYARD_HOME=rel) keeps the partial form, still valid.
        if not isinstance(storage, DefaultStorage) or not posixpath.isabs(host_path):
            return self
        merged = SharedFsStorage(type="shared_fs", host_path=host_path, **storage.model_dump())
        out = self.model_copy(update={"checkpoint_storage": merged})
        out._positions = self._positions
        return out

    def retention(self) -> Retention:
        """How many checkpoints are kept (checkpoint_storage's save_* numbers)."""
        return self.checkpoint_storage or Retention()

    def to_json_dict(self) -> dict:
        """The normalized config: what the master stores and a trial reads."""
        out = self.model_dump(mode="json", exclude=set(IGNORED_DEFAULTS))
        out["hyperparameters"] = self.hyperparameter_space()
        out["searcher"] = self.searcher_dict()
        for period in ("min_validation_period", "min_checkpoint_period"):
            value = getattr(self, period)
            out[period] = value.to_json() if value is not None else None
        return out

    def position(self, path: tuple) -> tuple[int | None, int | None]:
        """Line and column of a config path in the YAML it came from, when known."""
        return self._positions.of(path)
