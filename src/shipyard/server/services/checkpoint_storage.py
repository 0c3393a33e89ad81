"""Where an experiment's checkpoints are: the storage its config names (or the master's
default directory), opened for retention and downloads, handed to its trials as a spec, and
checked at submit. S3 credentials stay inside: an API answer shows the config without them,
and a trial's output masks them.

Keys given as `{secret: NAME}` (workspace secrets) are opened at each use, so a secret set
again takes effect at once (a running trial keeps the value its run started with), and one
deleted stops the master's use of the storage and its runs' starts (SecretsUnavailable).
"""

from __future__ import annotations

import copy
import json
import posixpath
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from shipyard.common.config import ExperimentConfig
from shipyard.common.config.checkpoint import S3Storage
from shipyard.common.errors import ConfigError
from shipyard.server import orm
from shipyard.server.services import secrets as workspace_secrets
from shipyard.server.services.experiment_config import config_of
from shipyard.storage import CheckpointStorage, storage_from_spec

HIDDEN = "********"
SPEC_ENV = "SHIPYARD_CHECKPOINT_STORAGE"
# The variables that hold a run's storage keys for its masking wrapper (launch/masked.py
# masks the values of the variables SHIPYARD_MASK_ENV names): so a key printed on its own
# is masked, not only the whole spec.
KEY_ENV = {
    "access_key": "SHIPYARD_CHECKPOINT_ACCESS_KEY",
    "secret_key": "SHIPYARD_CHECKPOINT_SECRET_KEY",
}


def spec_of(exp: orm.Experiment, secrets: Mapping[str, str] | None = None) -> dict[str, Any]:
    """What a trial of the experiment gets in SHIPYARD_CHECKPOINT_STORAGE (credentials
    included, when the config has them). Keys given as `{secret: NAME}` take their values
    from `secrets` (those its run was given), else the master opens them for its own use
    (`exp` must then be a row of an open session, outside a write transaction)."""
    if exp.checkpoint_base.startswith("/"):
        return {"type": "shared_fs", "base_path": exp.checkpoint_base}
    storage = config_of(exp).checkpoint_storage
    assert isinstance(storage, S3Storage), f"experiment {exp.id}: {exp.checkpoint_base}"
    names = storage.secret_names()
    if names and secrets is None:
        secrets = workspace_secrets.open_for_master(exp, names.values())
    return storage.spec(secrets)


def keys_to_mask(cfg: ExperimentConfig, secrets: Mapping[str, str]) -> dict[str, str]:
    """The storage's keys a run's output must not show, by the variable (KEY_ENV) that holds
    each for the masking wrapper: the secret_key, and an access_key from a secret (a literal
    access key id is no secret, as in Determined). `secrets`: the run's opened values."""
    storage = cfg.checkpoint_storage
    if not isinstance(storage, S3Storage):
        return {}
    spec = storage.spec(secrets)
    hidden = ["secret_key", *storage.secret_names()]
    return {KEY_ENV[field]: spec[field] for field in dict.fromkeys(hidden) if field in spec}


def storage_of(exp: orm.Experiment) -> CheckpointStorage:
    return _open(json.dumps(spec_of(exp), sort_keys=True))


@lru_cache(maxsize=64)
def _open(spec: str) -> CheckpointStorage:
    """One storage per spec: an S3 client takes tens of milliseconds to build, and the
    master only lists, reads and deletes through it (no per-trial state)."""
    return storage_from_spec(json.loads(spec))


def location(base: str, uuid: str) -> str:
    """Where a checkpoint of an experiment whose storage is at ``base`` is, for listings."""
    return posixpath.join(base, uuid)


def check_at_submit(cfg: ExperimentConfig, secrets: Mapping[str, str] | None = None) -> None:
    """An S3 storage the master cannot use (no such bucket, refused credentials, an
    endpoint that does not answer) is refused with the field at fault, before anything is
    stored: the master needs it for retention and downloads, and every trial would fail.
    Keys from secrets are checked once their values are open (`secrets`: those values)."""
    storage = cfg.checkpoint_storage
    if not isinstance(storage, S3Storage) or (storage.secret_names() and secrets is None):
        return
    from shipyard.storage.s3 import S3Location, S3Store, StoreError

    fields = {k: v for k, v in storage.spec(secrets).items() if k != "type"}
    try:
        S3Store(S3Location(**fields), connect_timeout=3, retries=1).check_access()
    except StoreError as exc:
        raise ConfigError(
            "the experiment's checkpoint storage cannot be used",
            [{"path": f"checkpoint_storage.{exc.field or 'endpoint_url'}", "message": str(exc)}],
        ) from None


def without_credentials(config: dict[str, Any]) -> dict[str, Any]:
    """The stored config as an API answer shows it: a literal S3 secret_key is hidden (one
    given as `{secret: NAME}` shows the name only)."""
    storage = config.get("checkpoint_storage")
    if not isinstance(storage, dict) or not isinstance(storage.get("secret_key"), str):
        return config
    shown = copy.deepcopy(config)
    shown["checkpoint_storage"]["secret_key"] = HIDDEN
    return shown
