"""Checkpoint storage (L1, stdlib only), in two levels: a Store holds files (store.py: put,
get, list, delete, exists); one checkpoint layer above it (checkpoints.py) keeps, for every
store, the rules that make files a checkpoint. SharedFSStore is the store of a directory."""

from __future__ import annotations

from pathlib import Path

from shipyard.storage.checkpoints import METADATA_FILE, CheckpointStorage
from shipyard.storage.shared_fs import SharedFSStore
from shipyard.storage.store import Store

__all__ = ["METADATA_FILE", "CheckpointStorage", "SharedFSStore", "Store", "storage_at"]


def storage_at(base_path: str | Path) -> CheckpointStorage:
    """The checkpoints in directory ``base_path``: what both shared_fs and directory storage
    resolve to once the config is validated (ExperimentConfig.checkpoint_base_path)."""
    return CheckpointStorage(SharedFSStore(base_path))
