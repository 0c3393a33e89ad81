"""ctx.checkpoint: storing checkpoints (manifest written last) and restoring them."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from shipyard.core._retry import request_with_retry
from shipyard.core.info import Info
from shipyard.storage import CheckpointStorage

if TYPE_CHECKING:
    from shipyard.core._http import JsonHttp  # http.client is imported only with a master


class CheckpointContext(Protocol):
    def store_path(
        self, metadata: dict[str, Any] | None = None, *, steps_completed: int | None = None
    ) -> contextlib.AbstractContextManager[tuple[Path, str]]:
        """Yield ``(directory, uuid)`` to write a new checkpoint into; on a clean exit it is
        finalized and registered, and becomes ``ctx.info.latest_checkpoint``."""
        ...

    def restore_path(self, uuid: str) -> contextlib.AbstractContextManager[Path]:
        """Yield the directory of a complete checkpoint (NotFound otherwise)."""
        ...

    def upload(
        self,
        local_dir: str | Path,
        metadata: dict[str, Any] | None = None,
        *,
        steps_completed: int | None = None,
    ) -> str:
        """Store a copy of ``local_dir`` as a new checkpoint and return its uuid."""
        ...

    def download(self, uuid: str, local_dir: str | Path) -> None:
        """Copy a complete checkpoint's files (metadata.json too) into ``local_dir``."""
        ...

    def read_metadata(self, uuid: str) -> dict[str, Any]: ...


class LocalCheckpoint:
    """No master: checkpoints are written to the storage and not registered anywhere."""

    def __init__(self, storage: Callable[[], CheckpointStorage], info: Info) -> None:
        # The storage is built on first use, so a bad storage setting fails only a script
        # that checkpoints, with a clear error, not init().
        self._make_storage = storage
        self._storage: CheckpointStorage | None = None
        self._info = info

    @property
    def storage(self) -> CheckpointStorage:
        if self._storage is None:
            self._storage = self._make_storage()
        return self._storage

    @contextlib.contextmanager
    def store_path(
        self, metadata: dict[str, Any] | None = None, *, steps_completed: int | None = None
    ) -> Iterator[tuple[Path, str]]:
        metadata, steps = _check_metadata(metadata, steps_completed)
        uuid = _new_uuid()
        path = self.storage.store_path(uuid)
        try:
            yield path, uuid
        except BaseException:
            # A half-written directory is not a checkpoint; don't leave it taking space.
            shutil.rmtree(path, ignore_errors=True)
            raise
        self._finish(uuid, metadata, steps)

    @contextlib.contextmanager
    def restore_path(self, uuid: str) -> Iterator[Path]:
        yield self.storage.restore_path(uuid)

    def upload(
        self,
        local_dir: str | Path,
        metadata: dict[str, Any] | None = None,
        *,
        steps_completed: int | None = None,
    ) -> str:
        metadata, steps = _check_metadata(metadata, steps_completed)
        uuid = _new_uuid()
        try:
            self.storage.upload(local_dir, uuid)
        except BaseException:
            self.storage.delete(uuid)
            raise
        self._finish(uuid, metadata, steps)
        return uuid

    def download(self, uuid: str, local_dir: str | Path) -> None:
        self.storage.download(uuid, local_dir)

    def read_metadata(self, uuid: str) -> dict[str, Any]:
        return self.storage.read_metadata(uuid)

    def _finish(self, uuid: str, metadata: dict[str, Any], steps_completed: int) -> None:
        resources = self.storage.finalize(uuid, metadata, steps_completed=steps_completed)
        self._register(uuid, metadata, steps_completed, resources)
        self._info.latest_checkpoint = uuid

    def _register(
        self, uuid: str, metadata: dict[str, Any], steps_completed: int, resources: dict[str, int]
    ) -> None:
        print(f"[shipyard] checkpoint {uuid} stored (steps={steps_completed})", flush=True)


class MasterCheckpoint(LocalCheckpoint):
    """Also registers each checkpoint with the master, synchronously: the trial goes on only
    once the master knows the checkpoint exists (so a restart can resume from it)."""

    def __init__(
        self, storage: Callable[[], CheckpointStorage], info: Info, http: JsonHttp
    ) -> None:
        super().__init__(storage, info)
        self._http = http

    def _register(
        self, uuid: str, metadata: dict[str, Any], steps_completed: int, resources: dict[str, int]
    ) -> None:
        body = {
            "run_id": self._info.run_id,
            "uuid": uuid,
            "steps_completed": steps_completed,
            "metadata": metadata,
            "resources": resources,
        }
        request_with_retry(
            self._http, "POST", f"/api/v1/trials/{self._info.trial_id}/checkpoints", body
        )


def _check_metadata(
    metadata: dict[str, Any] | None, steps_completed: int | None
) -> tuple[dict[str, Any], int]:
    """Fail before the user writes gigabytes, not after."""
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        raise TypeError(f"checkpoint metadata must be a dict, got {type(metadata).__name__}")
    try:
        json.dumps(metadata, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"checkpoint metadata must be JSON-serializable: {exc}") from exc
    steps = metadata.get("steps_completed", 0) if steps_completed is None else steps_completed
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise ValueError(f"checkpoint steps_completed must be an int >= 0, got {steps!r}")
    return dict(metadata), steps


def _new_uuid() -> str:
    """A random (version 4) UUID, without the uuid module's import cost."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40
    raw[8] = (raw[8] & 0x3F) | 0x80
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
