"""Checkpoint storage (L1, stdlib only): where trials write checkpoints and restore from."""

from __future__ import annotations

import os
from typing import Any

from shipyard.common.errors import ConfigError, NotSupportedYet
from shipyard.storage.base import METADATA_FILE, CheckpointStorage
from shipyard.storage.shared_fs import SharedFSStorage

__all__ = ["METADATA_FILE", "CheckpointStorage", "SharedFSStorage", "storage_from_dict"]

_NOT_BUILT = ("s3", "gcs", "azure")


def storage_from_dict(config: dict[str, Any]) -> CheckpointStorage:
    """Build the storage described by a checkpoint_storage config, e.g.
    ``{"type": "shared_fs", "base_path": "/abs/dir"}``. Determined's shared_fs form
    ``{"host_path": "/abs", "storage_path": "sub"}`` is accepted too. Other fields (retention
    policy, container paths) are the config model's business and are ignored here."""
    where = "checkpoint_storage"
    if not isinstance(config, dict):
        raise ConfigError(
            f"{where} must be a mapping",
            [{"path": where, "message": f"expected a mapping, got {type(config).__name__}"}],
        )
    kind = config.get("type")
    if kind in _NOT_BUILT:
        raise NotSupportedYet(
            f"checkpoint storage type {kind!r} is not supported yet",
            [{"path": f"{where}.type", "message": "supported: shared_fs, directory"}],
        )
    if kind not in ("shared_fs", "directory"):
        raise ConfigError(
            f"unknown checkpoint storage type {kind!r}",
            [{"path": f"{where}.type", "message": "expected one of: shared_fs, directory"}],
        )
    base_path = config.get("base_path")
    if base_path is None and kind == "directory":
        base_path = config.get("container_path")  # Determined's name for it
    if base_path is None and config.get("host_path"):
        base_path = os.path.join(str(config["host_path"]), str(config.get("storage_path") or ""))
    if not isinstance(base_path, str) or not base_path.startswith("/"):
        raise ConfigError(
            "checkpoint storage needs an absolute base_path",
            [
                {
                    "path": f"{where}.base_path",
                    "message": f"expected an absolute path, got {base_path!r}",
                }
            ],
        )
    return SharedFSStorage(base_path)
