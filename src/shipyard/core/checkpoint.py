"""ctx.checkpoint: storing checkpoints (manifest written last) and restoring them."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import quote

from shipyard.common.errors import CheckpointWriteError, InvalidRequest
from shipyard.core._retry import request_with_retry
from shipyard.core.info import Info
from shipyard.storage import CheckpointStorage

if TYPE_CHECKING:
    from shipyard.core._http import JsonHttp  # http.client is imported only with a master

# The metadata key of a sharded checkpoint: how many ranks wrote it (see check_shards).
SHARD_WORLD_SIZE = "shard_world_size"


class CheckpointContext(Protocol):
    def store_path(
        self,
        metadata: dict[str, Any] | None = None,
        *,
        steps_completed: int | None = None,
        shard: bool = False,
    ) -> contextlib.AbstractContextManager[tuple[Path, str]]:
        """Yield ``(directory, uuid)`` to write a new checkpoint into; on a clean exit it is
        finalized and registered, and becomes ``ctx.info.latest_checkpoint``. With several
        ranks every rank calls it; ``shard`` says whether every rank writes files (True) or
        only the chief (False: the other ranks get a path that refuses to be used)."""
        ...

    def restore_path(
        self, uuid: str, *, reshard: bool = False
    ) -> contextlib.AbstractContextManager[Path]:
        """Yield the directory of a complete checkpoint (NotFound otherwise). A checkpoint
        written in shards by another number of ranks is refused (InvalidRequest) unless
        ``reshard`` says the caller reads the shards itself."""
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

    def delete(self, uuid: str) -> None:
        """Delete a checkpoint of this experiment: its files, and with a master its record.
        Not a collective: one rank calls it. The checkpoint a trial that may still run
        resumes from is refused (Conflict)."""
        ...


class LocalCheckpoint:
    """No master: checkpoints are written to the storage and not registered anywhere."""

    def __init__(self, storage: Callable[[], CheckpointStorage], info: Info) -> None:
        # The storage is built on first use, so a bad storage setting fails only a script
        # that checkpoints, with a clear error, not init().
        self._make_storage = storage
        self._storage: CheckpointStorage | None = None
        self._info = info
        # Called after each stored checkpoint (the TensorBoard files' copy); returns at once.
        self.on_stored: Callable[[], None] | None = None

    @property
    def storage(self) -> CheckpointStorage:
        if self._storage is None:
            self._storage = self._make_storage()
        return self._storage

    @contextlib.contextmanager
    def store_path(
        self,
        metadata: dict[str, Any] | None = None,
        *,
        steps_completed: int | None = None,
        shard: bool = False,  # one process: the chief writes everything either way
    ) -> Iterator[tuple[Path, str]]:
        metadata, steps = _check_metadata(metadata, steps_completed)
        if shard:
            metadata[SHARD_WORLD_SIZE] = 1
        uuid = _new_uuid()
        with _writing(self.storage, uuid):
            self._begin(uuid)
            path = self.storage.store_path(uuid)
            yield path, uuid
            resources = self.storage.finalize(uuid, metadata, steps_completed=steps)
        self._finish(uuid, metadata, steps, resources)

    @contextlib.contextmanager
    def restore_path(self, uuid: str, *, reshard: bool = False) -> Iterator[Path]:
        with self.storage.restore_path(uuid) as path:
            if not reshard:
                check_shards(self.read_metadata(uuid), uuid, world_size=1)
            yield path

    def upload(
        self,
        local_dir: str | Path,
        metadata: dict[str, Any] | None = None,
        *,
        steps_completed: int | None = None,
    ) -> str:
        metadata, steps = _check_metadata(metadata, steps_completed)
        uuid = _new_uuid()
        with _writing(self.storage, uuid):
            self._begin(uuid)
            self.storage.upload(local_dir, uuid)
            resources = self.storage.finalize(uuid, metadata, steps_completed=steps)
        self._finish(uuid, metadata, steps, resources)
        return uuid

    def download(self, uuid: str, local_dir: str | Path) -> None:
        self.storage.download(uuid, local_dir)

    def read_metadata(self, uuid: str) -> dict[str, Any]:
        return self.storage.read_metadata(uuid)

    def delete(self, uuid: str) -> None:
        self.storage.delete(uuid)
        if self._info.latest_checkpoint == uuid:
            self._info.latest_checkpoint = None

    def _begin(self, uuid: str) -> None:
        """Before anything of checkpoint ``uuid`` is written."""

    def _finish(
        self, uuid: str, metadata: dict[str, Any], steps_completed: int, resources: dict[str, int]
    ) -> None:
        """Only a checkpoint whose metadata.json is written gets here: register it."""
        self._register(uuid, metadata, steps_completed, resources)
        self._info.latest_checkpoint = uuid
        if self.on_stored is not None:
            self.on_stored()

    def _register(
        self, uuid: str, metadata: dict[str, Any], steps_completed: int, resources: dict[str, int]
    ) -> None:
        print(f"[shipyard] checkpoint {uuid} stored (steps={steps_completed})", flush=True)


class MasterCheckpoint(LocalCheckpoint):
    """Also registers each checkpoint with the master, synchronously: the trial goes on only
    once the master knows the checkpoint exists (so a restart can resume from it).

    Every metric reported before the checkpoint is delivered first: a restart resumes after
    the checkpoint, so a metric still queued when the process dies right after registering
    it would never be reported again (the chaos suite found this)."""

    def __init__(
        self,
        storage: Callable[[], CheckpointStorage],
        info: Info,
        http: JsonHttp,
        flush_metrics: Callable[[], None],
    ) -> None:
        super().__init__(storage, info)
        self._http = http
        self._flush_metrics = flush_metrics

    def _register(
        self, uuid: str, metadata: dict[str, Any], steps_completed: int, resources: dict[str, int]
    ) -> None:
        self._flush_metrics()
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
        try:
            self.storage.clear_writing(uuid)
        except OSError:  # harmless: the master skips the mark of a registered checkpoint
            pass

    def delete(self, uuid: str) -> None:
        # The master deletes the files (it checks first that no trial resumes from it) and
        # its record; not retried: a resent DELETE would find it gone.
        path = f"/api/v1/trials/{self._info.trial_id}/checkpoints/{quote(uuid, safe='')}"
        self._http.request("DELETE", f"{path}?run_id={self._info.run_id}")

    def _begin(self, uuid: str) -> None:
        # Until it is registered, the master can tell whose unfinished checkpoint this is.
        owner = {"trial_id": self._info.trial_id, "run_id": self._info.run_id}
        self.storage.mark_writing(uuid, owner)


@contextlib.contextmanager
def _writing(storage: CheckpointStorage, uuid: str) -> Iterator[None]:
    """Around everything that writes checkpoint ``uuid`` (its directory, the user's files,
    metadata.json). On a failure the partial checkpoint is removed, since it is not a
    checkpoint and may be what filled the disk; an OSError becomes a CheckpointWriteError
    that names where, because "[Errno 28] No space left on device" alone does not say
    which disk. Other exceptions pass through unchanged."""
    try:
        yield
    except CheckpointWriteError:  # from a nested store: it names its own checkpoint
        _remove_partial(storage, uuid)
        raise
    except OSError as exc:
        _remove_partial(storage, uuid)
        raise write_error(storage, uuid, exc) from exc
    except BaseException:
        _remove_partial(storage, uuid)
        raise


def write_error(storage: CheckpointStorage, uuid: str, exc: OSError) -> CheckpointWriteError:
    """An OSError while writing checkpoint ``uuid``, naming where."""
    return CheckpointWriteError(
        f"cannot write checkpoint {uuid} to {storage.location(uuid)}: {_describe(exc)}",
        errno=exc.errno,
    )


def _remove_partial(storage: CheckpointStorage, uuid: str) -> None:
    """Best effort: removing can fail too (read-only storage); the write error matters more."""
    try:
        storage.delete(uuid)
    except OSError as exc:
        print(f"[shipyard] could not remove partial checkpoint {uuid}: {exc}", file=sys.stderr)


def _describe(exc: OSError) -> str:
    """The OS error in one line. copytree (upload) gathers one error per file in a list."""
    failures = exc.args[0] if isinstance(exc, shutil.Error) and exc.args else None
    if isinstance(failures, list) and failures and len(failures[0]) == 3:
        source, _target, why = failures[0]
        text = str(why) if str(source) in str(why) else f"{why} (copying {source})"
        more = len(failures) - 1
        return f"{text} (and {more} more file{'s' if more > 1 else ''})" if more else text
    return str(exc)


def check_shards(metadata: dict[str, Any], uuid: str, *, world_size: int) -> None:
    """A sharded checkpoint holds one part per rank that wrote it: another number of ranks
    would each read another rank's part, or none, and resume from a wrong state silently."""
    written_by = metadata.get(SHARD_WORLD_SIZE)
    if written_by is None or written_by == world_size:
        return
    raise InvalidRequest(
        f"checkpoint {uuid} was written in shards by {written_by} rank"
        f"{'s' if written_by != 1 else ''} (store_path(shard=True)) and this trial has "
        f"{world_size}: each rank would read another rank's part, or none. Resume it with "
        f"resources.slots_per_trial: {written_by}, or read every rank's files yourself with "
        "ctx.checkpoint.restore_path(uuid, reshard=True)"
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
