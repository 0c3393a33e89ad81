"""ctx.artifacts: files a trial keeps beside its metrics (images, texts, tables, any file).

Each is written to the experiment's checkpoint storage under
``artifacts/trial-<id>/<step or "none">/<name>``, by the trial itself (so a node that shares
no disk with the master writes it to S3 as it does its checkpoints), then recorded by the
master (``POST /trials/{id}/artifacts``), which lists it and serves it to the UI.

Every call checks its arguments and takes a copy of the bytes on the calling thread (a bad
name, a file too large, an image that is none raise there), then returns: one background
thread writes and records the artifacts in order. An image every few hundred steps must not
stall training on an S3 round trip, as a metric never does; the copy lets the caller
overwrite its file at once. Waiting artifacts hold at most MAX_PENDING_BYTES (a call beyond
it waits for room). A write or record that fails is raised by the next call, ``flush()`` or
``ctx.close()``, which waits for every artifact logged before it.

Only the chief stores artifacts: on the other ranks the calls check their arguments and
drop the artifact, as their metrics are (ctx.distributed, "the chief decides").
"""

from __future__ import annotations

import json
import os
import queue
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from shipyard.common import artifact_rules as rules
from shipyard.common.errors import CheckpointWriteError, Conflict, MasterUnavailable, ShipyardError
from shipyard.core._artifact_data import (
    check_name,
    check_steps,
    file_kind,
    image_bytes,
    table_cells,
)
from shipyard.core._env import env_int
from shipyard.core._retry import request_with_retry

if TYPE_CHECKING:
    from shipyard.storage import CheckpointStorage

MAX_BYTES_ENV = "SHIPYARD_ARTIFACT_MAX_BYTES"
MAX_PENDING_BYTES = 256 * 2**20
DEFAULT_FLUSH_TIMEOUT_S = 90.0  # as ctx.train's: the master's retry window plus a margin
LOCAL_DIR = "artifacts"


class ArtifactsContext(Protocol):
    def log_file(
        self,
        path: str | os.PathLike[str],
        name: str | None = None,
        steps_completed: int | None = None,
        kind: str | None = None,
    ) -> str:
        """Keep a copy of a file. ``name`` defaults to the file's name; ``kind``: image
        (PNG, JPEG, GIF, WebP), text (UTF-8), table (.csv, or .json as log_table writes)
        or file (default: image when the bytes are one, else file). Returns its key."""
        ...

    def log_image(self, name: str, image: Any, steps_completed: int | None = None) -> str:
        """An encoded image (PNG, JPEG, GIF or WebP: bytes or a file's path), or with
        Pillow installed a PIL image or a uint8 numpy array (stored as PNG)."""
        ...

    def log_text(self, name: str, text: str, steps_completed: int | None = None) -> str: ...

    def log_table(
        self,
        name: str,
        rows: Any,
        steps_completed: int | None = None,
        *,
        columns: Sequence[str] | None = None,
    ) -> str:
        """A table: ``rows`` a list of dicts (columns: their keys), or of lists with
        ``columns``, or a pandas DataFrame. Stored as JSON ``{"columns", "rows"}``."""
        ...

    def flush(self, timeout_s: float = ...) -> None:
        """Wait until every artifact logged so far is stored and recorded."""
        ...

    def close(self, timeout_s: float = ...) -> None: ...


class _Artifact:
    __slots__ = ("data", "kind", "media_type", "name", "steps")

    def __init__(
        self, name: str, steps: int | None, kind: str, media_type: str, data: bytes
    ) -> None:
        self.name = name
        self.steps = steps
        self.kind = kind
        self.media_type = media_type
        self.data = data

    def label(self) -> str:
        step = "" if self.steps is None else f" of step {self.steps}"
        return f"artifact {self.name!r}{step}"


class Artifacts:
    """The checks and copies every mode shares; ``_keep`` says what becomes of an artifact."""

    def __init__(self) -> None:
        self.max_bytes = env_int(MAX_BYTES_ENV, rules.DEFAULT_MAX_BYTES) or 0
        if self.max_bytes <= 0:
            raise ValueError(f"{MAX_BYTES_ENV} must be a positive number of bytes")

    # --- the calls -------------------------------------------------------------------------

    def log_file(
        self,
        path: str | os.PathLike[str],
        name: str | None = None,
        steps_completed: int | None = None,
        kind: str | None = None,
    ) -> str:
        source = Path(path)
        name = source.name if name is None else name
        check_name(name)
        check_steps(steps_completed)
        if kind is not None and kind not in rules.KINDS:
            raise ValueError(f"artifact kind must be one of {', '.join(rules.KINDS)}, got {kind!r}")
        size = source.stat().st_size  # FileNotFoundError names the path
        if not source.is_file():
            raise ValueError(f"cannot log {source} as an artifact: not a file")
        self._check_size(name, size)
        data = source.read_bytes()
        self._check_size(name, len(data))  # it grew meanwhile
        kind, media_type = file_kind(name, data, kind)
        return self._keep(_Artifact(name, steps_completed, kind, media_type, data))

    def log_image(self, name: str, image: Any, steps_completed: int | None = None) -> str:
        check_name(name)
        check_steps(steps_completed)
        data = image_bytes(image, name, self._check_size)
        self._check_size(name, len(data))
        media_type = rules.image_type(data[:12])
        if media_type is None:
            raise ValueError(
                f"artifact {name!r} is not a PNG, JPEG, GIF or WebP image (by its first bytes)"
            )
        return self._keep(_Artifact(name, steps_completed, "image", media_type, data))

    def log_text(self, name: str, text: str, steps_completed: int | None = None) -> str:
        check_name(name)
        check_steps(steps_completed)
        if not isinstance(text, str):
            raise TypeError(f"artifact {name!r}: text must be a str, got {type(text).__name__}")
        try:
            data = text.encode()
        except UnicodeEncodeError as exc:
            raise ValueError(f"artifact {name!r}: the text is not valid Unicode: {exc}") from None
        self._check_size(name, len(data))
        return self._keep(_Artifact(name, steps_completed, "text", rules.TEXT_TYPE, data))

    def log_table(
        self,
        name: str,
        rows: Any,
        steps_completed: int | None = None,
        *,
        columns: Sequence[str] | None = None,
    ) -> str:
        check_name(name)
        check_steps(steps_completed)
        names, cells = table_cells(name, rows, columns)
        data = json.dumps({"columns": names, "rows": cells}, separators=(",", ":")).encode()
        self._check_size(name, len(data))
        return self._keep(_Artifact(name, steps_completed, "table", "application/json", data))

    def flush(self, timeout_s: float = DEFAULT_FLUSH_TIMEOUT_S) -> None:
        return None

    def close(self, timeout_s: float = DEFAULT_FLUSH_TIMEOUT_S) -> None:
        return None

    # --- for the modes ------------------------------------------------------------------------

    def _keep(self, artifact: _Artifact) -> str:
        raise NotImplementedError

    def _check_size(self, name: str, size: int) -> None:
        if size > self.max_bytes:
            raise ValueError(
                f"artifact {name!r} is {size} bytes, over the limit of {self.max_bytes} "
                f"({MAX_BYTES_ENV})"
            )


class DroppedArtifacts(Artifacts):
    """A rank other than the chief: checked, then dropped (the chief's are the trial's)."""

    def _keep(self, artifact: _Artifact) -> str:
        return ""


class _Queued(Artifacts):
    """One background thread stores the artifacts in the order they were logged."""

    thread_name = "shipyard-artifacts"

    def __init__(self) -> None:
        super().__init__()
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._room = threading.Condition(self._lock)
        self._pending = 0  # bytes logged and not yet stored
        self._failure: BaseException | None = None
        self._closed = False

    def _store(self, artifact: _Artifact) -> None:
        """Write and record one artifact (on the background thread)."""
        raise NotImplementedError

    def _key(self, artifact: _Artifact) -> str:
        raise NotImplementedError

    def _keep(self, artifact: _Artifact) -> str:
        self._check_usable()
        size = len(artifact.data)
        with self._room:
            while self._pending and self._pending + size > MAX_PENDING_BYTES:
                self._room.wait()
            self._pending += size
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name=self.thread_name, daemon=True
                )
                self._thread.start()
        self._queue.put(artifact)
        return self._key(artifact)

    def _check_usable(self) -> None:
        if self._closed:
            raise Conflict(
                "this shipyard.core context is closed: log artifacts inside the "
                "`with shipyard.core.init() as ctx:` block"
            )
        failure, self._failure = self._failure, None
        if failure is not None:
            raise failure

    def flush(self, timeout_s: float = DEFAULT_FLUSH_TIMEOUT_S) -> None:
        if self._thread is not None:
            done = threading.Event()
            self._queue.put(done)
            if not done.wait(timeout_s):
                raise MasterUnavailable(
                    f"artifacts were not stored within {timeout_s:.0f} s "
                    f"({self._pending} bytes still waiting)"
                )
        failure, self._failure = self._failure, None
        if failure is not None:
            raise failure

    def close(self, timeout_s: float = DEFAULT_FLUSH_TIMEOUT_S) -> None:
        if self._closed:
            return
        try:
            self.flush(timeout_s)
        finally:
            self._closed = True
            if self._thread is not None:
                self._queue.put(None)
                self._thread.join(timeout=1.0)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                self._done()
                return
            if isinstance(item, threading.Event):
                item.set()
                continue
            try:
                self._store(item)
            except BaseException as exc:  # raised on the calling thread, by its next call
                failure = _failed(item, exc)
                print(f"[shipyard] {failure}", file=sys.stderr, flush=True)
                if self._failure is None:
                    self._failure = failure
            finally:
                with self._room:
                    self._pending -= len(item.data)
                    self._room.notify_all()

    def _done(self) -> None:
        """The thread ends: release what it holds."""


class LocalArtifacts(_Queued):
    """No master: ``./artifacts/<step or "none">/<name>``, and one line on stdout."""

    thread_name = "shipyard-artifact-writer"

    def __init__(self, directory: Path) -> None:
        super().__init__()
        self._directory = directory

    def _key(self, artifact: _Artifact) -> str:
        step = "none" if artifact.steps is None else str(artifact.steps)
        return str(self._directory / step / artifact.name)

    def _store(self, artifact: _Artifact) -> None:
        from shipyard.storage import SharedFSStore

        step = "none" if artifact.steps is None else str(artifact.steps)
        try:
            SharedFSStore(self._directory).put(f"{step}/{artifact.name}", artifact.data)
        except OSError as exc:
            where = self._key(artifact)
            raise CheckpointWriteError(
                f"cannot write {artifact.label()} to {where}: {exc}", errno=exc.errno
            ) from exc
        where = self._key(artifact)
        here = os.path.relpath(where)
        print(
            f"[shipyard] {artifact.label()} ({artifact.kind}, {len(artifact.data)} bytes) "
            f"stored at {where if here.startswith('..') else os.path.join('.', here)}",
            flush=True,
        )


class MasterArtifacts(_Queued):
    """Written to the experiment's checkpoint storage, then recorded by the master."""

    thread_name = "shipyard-artifact-sender"

    def __init__(
        self,
        master: str,
        trial_id: int,
        run_id: int,
        storage: Callable[[], CheckpointStorage],
    ) -> None:
        super().__init__()
        self._master = master
        self._trial_id = trial_id
        self._run_id = run_id
        self._make_storage = storage
        self._storage: CheckpointStorage | None = None
        self._http: Any = None

    def _key(self, artifact: _Artifact) -> str:
        return rules.storage_key(self._trial_id, artifact.steps, artifact.name)

    def _store(self, artifact: _Artifact) -> None:
        import hashlib

        if self._storage is None:
            self._storage = self._make_storage()
        if self._http is None:
            from shipyard.core._http import JsonHttp

            self._http = JsonHttp(self._master)
        key = self._key(artifact)
        try:
            self._storage.store.put(key, artifact.data)
        except OSError as exc:
            raise CheckpointWriteError(
                f"cannot write {artifact.label()} to {self._storage.store}/{key}: {exc}",
                errno=exc.errno,
            ) from exc
        body = {
            "run_id": self._run_id,
            "name": artifact.name,
            "steps_completed": artifact.steps,
            "kind": artifact.kind,
            "media_type": artifact.media_type,
            "size": len(artifact.data),
            "sha256": hashlib.sha256(artifact.data).hexdigest(),
            "storage_path": key,
        }
        request_with_retry(self._http, "POST", f"/api/v1/trials/{self._trial_id}/artifacts", body)

    def _done(self) -> None:
        if self._http is not None:
            self._http.close()  # this thread's connection


def make_artifacts(
    *,
    master: str | None,
    trial_id: int | None,
    run_id: int,
    is_chief: bool,
    storage: Callable[[], CheckpointStorage],
) -> Artifacts:
    """ctx.artifacts for this process: dropped on ranks other than the chief, local
    files without a master, the checkpoint storage and the master otherwise."""
    if not is_chief:
        return DroppedArtifacts()
    if master is None or trial_id is None:
        return LocalArtifacts(Path(os.getcwd(), LOCAL_DIR))
    return MasterArtifacts(master, trial_id, run_id, storage)


# --- the background thread's failures --------------------------------------------------------


def _failed(artifact: _Artifact, exc: BaseException) -> BaseException:
    """What the next call raises for an artifact that could not be stored: the same kind
    of error, naming the artifact."""
    if isinstance(exc, CheckpointWriteError) or not isinstance(exc, ShipyardError):
        return exc
    try:
        return type(exc)(f"{artifact.label()} was not stored: {exc.message}")
    except TypeError:  # a subclass with another signature
        return exc
