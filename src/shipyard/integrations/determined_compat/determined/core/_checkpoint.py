"""core_context.checkpoint with Determined's semantics on Shipyard's ctx.checkpoint.

The difference that matters: in Determined ``store_path(shard=False)`` and
``upload(shard=False)`` are called by the chief alone (``if rank == 0: with store_path()``),
while Shipyard's are collectives every rank enters. So with shard=False the chief uses its
own single-process checkpoint context (the one Shipyard's collective wraps), which
registers with the master and involves no other rank; shard=True is Shipyard's collective.
With shard=True a rank's metadata is optional: the ranks' metadata are merged (dicts
recursively, as Determined does) and only the merged one needs steps_completed.
"""

from __future__ import annotations

import contextlib
import enum
import os
import pathlib
from collections.abc import Callable, Iterator
from typing import Any

from .._errors import not_supported


class DownloadMode(enum.Enum):
    LocalWorkersShareDownload = "LOCAL_WORKERS_SHARE_DOWNLOAD"
    NoSharedDownload = "NO_SHARED_DOWNLOAD"


def _no_selector(selector: Callable[[str], bool] | None, call: str) -> None:
    if selector is not None:
        raise not_supported(f"checkpoint.{call}(selector=...)", "copy the files you need")


def _steps(metadata: dict[str, Any] | None, merged: str = "") -> dict[str, Any]:
    """Determined requires steps_completed in a checkpoint's metadata; so does the shim
    (the trial resumes from it). ``merged``: what to say of a sharded checkpoint's."""
    metadata = {} if metadata is None else metadata
    if not isinstance(metadata, dict) or "steps_completed" not in metadata:
        raise ValueError(
            f"checkpoint metadata{merged} must be a dict with a 'steps_completed' item, e.g. "
            "store_path({'steps_completed': steps})"
        )
    return metadata


def merge_metadata(all_metadata: list[Any]) -> dict[str, Any]:
    """The ranks' metadata (rank order) as one, as Determined merges them: dicts under the
    same key merge recursively; any other value given by two ranks must be equal. Raises
    ValueError naming every conflicting key (``/a/b``) and the ranks that gave it."""
    merged: dict[str, Any] = {}
    givers: dict[str, list[int]] = {}  # full key -> the ranks that gave it
    conflicts: set[str] = set()

    def merge(into: dict[str, Any], theirs: dict[str, Any], rank: int, prefix: str) -> None:
        for key, value in theirs.items():
            full = f"{prefix}/{key}"
            givers.setdefault(full, []).append(rank)
            if isinstance(value, dict) and isinstance(into.get(key, {}), dict):
                merge(into.setdefault(key, {}), value, rank, full)
            elif key in into and into[key] != value:
                conflicts.add(full)
            else:
                into[key] = value

    for rank, metadata in enumerate(all_metadata):
        if metadata is None:
            continue
        if not isinstance(metadata, dict):
            raise ValueError(
                f"checkpoint metadata must be a dict or None, got {type(metadata).__name__} "
                f"on rank {rank}"
            )
        merge(merged, metadata, rank, "")
    if conflicts:
        listed = "; ".join(f"{key} (ranks {givers[key]})" for key in sorted(conflicts))
        raise ValueError(
            "refusing to store a checkpoint whose ranks' metadata conflict: each of these "
            f"keys has different values on different ranks: {listed}"
        )
    return merged


class CheckpointContext:
    def __init__(self, inner: Any) -> None:
        self._ctx = inner

    @property
    def _rank(self) -> int:
        return int(self._ctx.distributed.rank)

    def _chief_only(self, call: str) -> Any:
        """The chief's own, non-collective checkpoint context."""
        if self._rank != 0:
            raise RuntimeError(
                f"cannot call CheckpointContext.{call}(shard=False) from non-chief worker "
                f"(rank={self._rank}): only the chief stores it (if rank == 0: ...), or pass "
                "shard=True on every rank"
            )
        checkpoint = self._ctx.checkpoint
        if self._ctx.distributed.size == 1:
            return checkpoint
        # Several ranks: Shipyard's DistributedCheckpoint wraps the chief's own context.
        from shipyard.core._dist_checkpoint import DistributedCheckpoint

        if not isinstance(checkpoint, DistributedCheckpoint):
            raise RuntimeError(
                f"CheckpointContext.{call}(shard=False): with several ranks Shipyard's "
                f"checkpoint context should be a DistributedCheckpoint, got "
                f"{type(checkpoint).__name__}: the chief's own cannot be reached"
            )
        return checkpoint._inner

    def store_path(
        self, metadata: dict[str, Any] | None = None, *, shard: bool = False
    ) -> contextlib.AbstractContextManager[tuple[pathlib.Path, str]]:
        """Yield ``(path, storage_id)`` to write a checkpoint into; it is stored and
        registered when the block ends. shard=False: the chief alone calls it. shard=True:
        every rank calls it and writes its own files into the same checkpoint."""
        if not shard:
            chiefs = self._chief_only("store_path")
            return chiefs.store_path(_steps(metadata))  # type: ignore[no-any-return]
        return self._store_sharded(metadata)

    @contextlib.contextmanager
    def _store_sharded(self, metadata: dict[str, Any] | None) -> Iterator[tuple[pathlib.Path, str]]:
        # A rank's metadata is optional (None on all but one is usual): only the merged one
        # must have steps_completed. Every rank merges the same gathered list, so a conflict
        # or a missing steps_completed raises on every rank, before the collective store.
        merged = merge_metadata(self._ctx.distributed.allgather(metadata))
        _steps(merged, " (merged from every rank's)")
        with self._ctx.checkpoint.store_path(merged, shard=True) as (path, uuid):
            yield pathlib.Path(path), uuid

    @contextlib.contextmanager
    def restore_path(
        self,
        storage_id: str,
        download_mode: DownloadMode = DownloadMode.LocalWorkersShareDownload,
        *,
        selector: Callable[[str], bool] | None = None,
    ) -> Iterator[pathlib.Path]:
        """The checkpoint's directory (read where it is stored; nothing is copied)."""
        _no_selector(selector, "restore_path")
        DownloadMode(download_mode)
        with self._ctx.checkpoint.restore_path(storage_id, reshard=True) as path:
            yield pathlib.Path(path)

    def upload(
        self,
        ckpt_dir: str | os.PathLike[str] | None,
        metadata: dict[str, Any] | None = None,
        *,
        shard: bool = False,
        selector: Callable[[str], bool] | None = None,
    ) -> str:
        """Store a copy of ``ckpt_dir`` as a new checkpoint; returns its storage_id."""
        _no_selector(selector, "upload")
        metadata = _steps(metadata)
        if shard:
            raise not_supported(
                "checkpoint.upload(shard=True)",
                "write each rank's files with store_path(shard=True)",
            )
        if ckpt_dir is None:
            raise RuntimeError("cannot call .upload(ckpt_dir=None, shard=False): nothing to store")
        uuid: str = self._chief_only("upload").upload(ckpt_dir, metadata)
        return uuid

    def download(
        self,
        storage_id: str,
        ckpt_dir: str | os.PathLike[str],
        download_mode: DownloadMode = DownloadMode.LocalWorkersShareDownload,
        *,
        selector: Callable[[str], bool] | None = None,
    ) -> None:
        """Copy the checkpoint's files into ``ckpt_dir`` (each caller copies its own)."""
        _no_selector(selector, "download")
        DownloadMode(download_mode)
        self._ctx.checkpoint.download(storage_id, ckpt_dir)

    def get_metadata(self, storage_id: str) -> dict[str, Any]:
        metadata: dict[str, Any] = self._ctx.checkpoint.read_metadata(storage_id)
        return metadata

    def delete(self, storage_id: str) -> None:
        """Delete a checkpoint of this experiment, its files and its record (the master
        refuses the one a trial that may still run resumes from)."""
        self._ctx.checkpoint.delete(storage_id)
