"""ctx.checkpoint with several ranks: the chief names, finalizes and registers each
checkpoint; with ``shard=True`` every rank writes its files into the same directory.

Every rank calls ``store_path`` (and ``upload``) at the same point: both are collectives.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

from shipyard.common.errors import CheckpointWriteError, InvalidRequest
from shipyard.core._run_error import failure_message
from shipyard.core.checkpoint import (
    SHARD_WORLD_SIZE,
    LocalCheckpoint,
    _check_metadata,
    _describe,
    _new_uuid,
    _remove_partial,
    _writing,
    check_shards,
    write_error,
)
from shipyard.core.distributed import DistributedContext
from shipyard.core.info import Info
from shipyard.storage import CheckpointStorage

NO_ERROR: str | None = None


class NotChiefPath:
    """What ``store_path(shard=False)`` yields on a rank other than the chief: only the chief
    writes that checkpoint. It is falsy (``if path:``), and any use as a path (``path / "x"``,
    ``open(path)``, ``str(path)``, ``f"{path}/x"``, ``path.mkdir()``) raises InvalidRequest
    saying so, instead of writing files somewhere no checkpoint will ever include."""

    def __init__(self, rank: int, uuid: str) -> None:
        self._rank = rank
        self._uuid = uuid

    def _refuse(self, *_args: Any, **_kwargs: Any) -> NoReturn:
        raise InvalidRequest(
            f"rank {self._rank} has no directory for checkpoint {self._uuid}: with "
            "store_path(shard=False) only the chief (rank 0) writes the checkpoint; write "
            "nothing on the other ranks (check ctx.distributed.is_chief, or `if path:`), or "
            "use store_path(shard=True) to have every rank write its own files"
        )

    __fspath__ = __str__ = __format__ = __truediv__ = __rtruediv__ = _refuse

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        self._refuse()

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"NotChiefPath(rank={self._rank}, uuid={self._uuid!r})"


class DistributedCheckpoint:
    """Wraps the rank's single-process checkpoint context (the chief's registers with the
    master; the others' only read storage)."""

    def __init__(self, inner: LocalCheckpoint, dist: DistributedContext, info: Info) -> None:
        self._inner = inner
        self._dist = dist
        self._info = info

    @property
    def storage(self) -> CheckpointStorage:
        return self._inner.storage

    @contextlib.contextmanager
    def store_path(
        self,
        metadata: dict[str, Any] | None = None,
        *,
        steps_completed: int | None = None,
        shard: bool = False,
    ) -> Iterator[tuple[Path, str]]:
        metadata, steps = _check_metadata(metadata, steps_completed)
        dist, chief = self._dist, self._dist.is_chief

        # 1. The chief names the checkpoint and makes its directory.
        if chief:
            uuid = _new_uuid()
            try:
                with _writing(self.storage, uuid):
                    self._inner._begin(uuid)
                    path: Path = self.storage.store_path(uuid)
            except Exception as exc:
                dist.broadcast((uuid, failure_message(exc)))
                raise
            dist.broadcast((uuid, None))
        else:
            # Only the chief's object is sent; this one gives the answer its type.
            uuid, error = dist.broadcast(("", NO_ERROR))
            if error:
                raise CheckpointWriteError(
                    f"checkpoint {uuid} was not stored: the chief (rank 0) could not create "
                    f"it: {error}"
                )
            path = self._worker_path(uuid) if shard else NotChiefPath(dist.rank, uuid)  # type: ignore[assignment]

        # 2. Every rank runs its block (only the chief writes, unless shard).
        own_error: Exception | None = None
        try:
            yield path, uuid
        except Exception as exc:
            own_error = self._as_write_error(uuid, exc)
        statuses = dist.allgather((shard, failure_message(own_error) if own_error else None))
        problems = [f"rank {r}: {text}" for r, (_shard, text) in enumerate(statuses) if text]
        if len({s for s, _text in statuses}) > 1:
            flags = ", ".join(f"rank {r} shard={s}" for r, (s, _text) in enumerate(statuses))
            problems.append(f"every rank must pass the same shard= ({flags})")

        # 3. The chief finalizes and registers it, or removes what was written.
        if chief:
            outcome = "; ".join(problems) or None
            if outcome is not None:
                _remove_partial(self.storage, uuid)
            else:
                if shard:
                    metadata[SHARD_WORLD_SIZE] = dist.size
                try:
                    with _writing(self.storage, uuid):
                        resources = self.storage.finalize(uuid, metadata, steps_completed=steps)
                    self._inner._finish(uuid, metadata, steps, resources)
                except Exception as exc:
                    dist.broadcast(f"rank 0 could not finalize or register it: {exc}")
                    raise
            dist.broadcast(outcome)
        else:
            outcome = dist.broadcast(NO_ERROR)
        if own_error is not None:
            raise own_error
        if outcome:
            if problems and not any(text for _s, text in statuses):
                raise InvalidRequest(f"checkpoint {uuid} was not stored: {outcome}")
            raise CheckpointWriteError(f"checkpoint {uuid} was not stored: {outcome}")
        self._info.latest_checkpoint = uuid

    def _worker_path(self, uuid: str) -> Path:
        try:
            return self.storage.shared_dir(uuid)
        except OSError as exc:
            raise CheckpointWriteError(
                f"cannot open checkpoint {uuid}: {_describe(exc)}", errno=exc.errno
            ) from exc

    def _as_write_error(self, uuid: str, exc: Exception) -> Exception:
        """An OSError from a rank's files names the checkpoint, as with one process."""
        if isinstance(exc, OSError) and not isinstance(exc, CheckpointWriteError):
            error = write_error(self.storage, uuid, exc)
            error.__cause__ = exc
            return error
        return exc

    @contextlib.contextmanager
    def restore_path(self, uuid: str, *, reshard: bool = False) -> Iterator[Path]:
        with self._inner.restore_path(uuid, reshard=True) as path:
            if not reshard:
                check_shards(self.read_metadata(uuid), uuid, world_size=self._dist.size)
            yield path

    def upload(
        self,
        local_dir: str | Path,
        metadata: dict[str, Any] | None = None,
        *,
        steps_completed: int | None = None,
    ) -> str:
        """A collective: the chief stores a copy of its ``local_dir`` (the other ranks'
        ``local_dir`` is not read); every rank gets the uuid."""
        if self._dist.is_chief:
            try:
                uuid = self._inner.upload(local_dir, metadata, steps_completed=steps_completed)
            except Exception as exc:
                self._dist.broadcast((None, failure_message(exc)))
                raise
            self._dist.broadcast((uuid, None))
            return uuid
        uuid, error = self._dist.broadcast(("", NO_ERROR))
        if error:
            raise CheckpointWriteError(f"the chief (rank 0) could not upload a checkpoint: {error}")
        self._info.latest_checkpoint = uuid
        return uuid

    def download(self, uuid: str, local_dir: str | Path) -> None:
        self._inner.download(uuid, local_dir)

    def read_metadata(self, uuid: str) -> dict[str, Any]:
        return self._inner.read_metadata(uuid)

    def delete(self, uuid: str) -> None:
        # Not a collective, and the chief's alone: only its context asks the master, which
        # checks that no trial resumes from the checkpoint; another rank's would remove the
        # files behind the master's back.
        if self._dist.rank != 0:
            raise InvalidRequest(
                f"rank {self._dist.rank} cannot delete checkpoint {uuid}: only the chief "
                "(rank 0) deletes checkpoints"
            )
        self._inner.delete(uuid)
