"""Checkpoint storage (L1, stdlib only), in two levels: a Store holds files (store.py: put,
get, list, delete, exists); one checkpoint layer above it (checkpoints.py) keeps, for every
store, the rules that make files a checkpoint. SharedFSStore is the store of a directory,
S3Store (s3.py, on boto3, imported only for it) that of an S3 bucket."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from shipyard.common.errors import InvalidRequest
from shipyard.storage.checkpoints import METADATA_FILE, CheckpointStorage
from shipyard.storage.shared_fs import SharedFSStore
from shipyard.storage.store import Store

__all__ = [
    "METADATA_FILE",
    "CheckpointStorage",
    "SharedFSStore",
    "Store",
    "storage_at",
    "storage_from_spec",
]
S3_FIELDS = ("bucket", "prefix", "endpoint_url", "region", "access_key", "secret_key")


def storage_at(base_path: str | Path) -> CheckpointStorage:
    """The checkpoints in directory ``base_path``: what both shared_fs and directory storage
    resolve to once the config is validated (ExperimentConfig.checkpoint_base_path)."""
    return CheckpointStorage(SharedFSStore(base_path))


def storage_from_spec(spec: dict[str, Any]) -> CheckpointStorage:
    """The checkpoints a resolved storage spec names: ``{"type": "shared_fs", "base_path":
    "/abs/dir"}`` or ``{"type": "s3", "bucket": ..., "prefix": ..., ...}`` (S3_FIELDS)."""
    kind = spec.get("type")
    if kind in ("shared_fs", "directory"):
        base = str(spec.get("base_path") or "")
        if not base.startswith("/"):
            raise InvalidRequest(f"{kind} storage needs an absolute base_path, got {base!r}")
        return storage_at(base)
    if kind == "s3":
        from shipyard.storage.s3 import S3Location, S3Store

        if not spec.get("bucket"):
            raise InvalidRequest("s3 storage needs a bucket")
        fields = {name: spec[name] for name in S3_FIELDS if spec.get(name) is not None}
        return CheckpointStorage(S3Store(S3Location(**fields)))
    raise InvalidRequest(f"unknown checkpoint storage type {kind!r}")
