"""Where an experiment's checkpoints are: the storage its config names (or the master's
default directory), opened for retention and downloads, handed to its trials as a spec, and
checked at submit. S3 credentials stay inside: an API answer shows the config without them.
"""

from __future__ import annotations

import copy
import json
import posixpath
from functools import lru_cache
from typing import Any

from shipyard.common.config import ExperimentConfig
from shipyard.common.config.checkpoint import S3Storage
from shipyard.common.errors import ConfigError
from shipyard.server import orm
from shipyard.server.services.experiment_config import config_of
from shipyard.storage import CheckpointStorage, storage_from_spec

HIDDEN = "********"


def spec_of(exp: orm.Experiment) -> dict[str, Any]:
    """What a trial of the experiment gets in SHIPYARD_CHECKPOINT_STORAGE (credentials
    included, when the config has them)."""
    if exp.checkpoint_base.startswith("/"):
        return {"type": "shared_fs", "base_path": exp.checkpoint_base}
    storage = config_of(exp).checkpoint_storage
    assert isinstance(storage, S3Storage), f"experiment {exp.id}: {exp.checkpoint_base}"
    return storage.spec()


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


def check_at_submit(cfg: ExperimentConfig) -> None:
    """An S3 storage the master cannot use (no such bucket, refused credentials, an
    endpoint that does not answer) is refused with the field at fault, before anything is
    stored: the master needs it for retention and downloads, and every trial would fail."""
    storage = cfg.checkpoint_storage
    if not isinstance(storage, S3Storage):
        return
    from shipyard.storage.s3 import S3Location, S3Store, StoreError

    fields = {k: v for k, v in storage.spec().items() if k != "type"}
    try:
        S3Store(S3Location(**fields), connect_timeout=3, retries=1).check_access()
    except StoreError as exc:
        raise ConfigError(
            "the experiment's checkpoint storage cannot be used",
            [{"path": f"checkpoint_storage.{exc.field or 'endpoint_url'}", "message": str(exc)}],
        ) from None


def without_credentials(config: dict[str, Any]) -> dict[str, Any]:
    """The stored config as an API answer shows it: an S3 secret_key is hidden."""
    storage = config.get("checkpoint_storage")
    if not isinstance(storage, dict) or storage.get("secret_key") is None:
        return config
    shown = copy.deepcopy(config)
    shown["checkpoint_storage"]["secret_key"] = HIDDEN
    return shown
