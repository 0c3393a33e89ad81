"""ctx.info: who this trial is and what it was given."""

from __future__ import annotations

import json
from typing import Any

from shipyard.common.errors import InvalidRequest
from shipyard.core._env import env_int, env_json, env_str


class Info:
    """Facts about the running trial. In local mode (no master) trial_id and experiment_id
    are None and hparams are what ``init(hparams=...)`` was given."""

    def __init__(
        self,
        *,
        master: str | None,
        trial_id: int | None,
        experiment_id: int | None,
        run_id: int,
        hparams: dict[str, Any],
        trial_seed: int,
        latest_checkpoint: str | None,
        experiment_config_path: str | None,
    ) -> None:
        self.master = master
        self.trial_id = trial_id
        self.experiment_id = experiment_id
        self.run_id = run_id
        self.hparams = hparams
        self.trial_seed = trial_seed
        # Updated by ctx.checkpoint each time a checkpoint is stored.
        self.latest_checkpoint = latest_checkpoint
        self._experiment_config_path = experiment_config_path
        self._experiment_config: dict[str, Any] | None = None

    @property
    def experiment_config(self) -> dict[str, Any]:
        """The normalized experiment config (read once, on first use); {} when there is none."""
        if self._experiment_config is None:
            self._experiment_config = _read_config(self._experiment_config_path)
        return self._experiment_config

    def __repr__(self) -> str:
        return (
            f"Info(trial_id={self.trial_id}, experiment_id={self.experiment_id}, "
            f"run_id={self.run_id}, hparams={self.hparams!r}, "
            f"latest_checkpoint={self.latest_checkpoint!r})"
        )


def info_from_env(*, master: str | None, hparams: dict[str, Any] | None = None) -> Info:
    """Build Info from the SHIPYARD_* variables. ``hparams`` is used only in local mode."""
    if master is not None:
        trial_id = env_int("SHIPYARD_TRIAL_ID")
        if trial_id is None:
            raise InvalidRequest(
                f"a master is set ({master}) but SHIPYARD_TRIAL_ID is not: the master sets it "
                "when it launches a trial; to run without a master, unset SHIPYARD_MASTER"
            )
        hparams_value = env_json("SHIPYARD_HPARAMS")
    else:
        trial_id = env_int("SHIPYARD_TRIAL_ID")
        hparams_value = hparams if hparams is not None else env_json("SHIPYARD_HPARAMS")
    if hparams_value is None:
        hparams_value = {}
    if not isinstance(hparams_value, dict):
        raise InvalidRequest(
            f"hyperparameters must be a JSON object (dict), got {type(hparams_value).__name__}"
        )
    return Info(
        master=master,
        trial_id=trial_id,
        experiment_id=env_int("SHIPYARD_EXPERIMENT_ID"),
        run_id=env_int("SHIPYARD_RUN_ID", 1) or 1,
        hparams=hparams_value,
        trial_seed=env_int("SHIPYARD_TRIAL_SEED", 0) or 0,
        latest_checkpoint=env_str("SHIPYARD_LATEST_CHECKPOINT"),
        experiment_config_path=env_str("SHIPYARD_EXPERIMENT_CONFIG"),
    )


def _read_config(path: str | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        with open(path, encoding="utf-8") as handle:
            config = json.load(handle)
    except OSError as exc:
        raise InvalidRequest(f"cannot read SHIPYARD_EXPERIMENT_CONFIG file {path}: {exc}") from exc
    except ValueError as exc:
        raise InvalidRequest(f"SHIPYARD_EXPERIMENT_CONFIG file {path} is not JSON: {exc}") from exc
    if not isinstance(config, dict):
        raise InvalidRequest(f"SHIPYARD_EXPERIMENT_CONFIG file {path} must hold a JSON object")
    return config
