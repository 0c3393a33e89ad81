"""A trial's TensorBoard directory: Shipyard's metrics written into it as scalars, and its
files copied to the experiment's checkpoint storage.

- The directory is ``<working dir>/tensorboard`` for the chief (rank 0) and
  ``<working dir>/tensorboard/rank-<n>`` for rank n (``ctx.train.get_tensorboard_path()``).
- The chief's sender thread writes every report it delivers as scalars (tag ``<group>/<name>``,
  step ``steps_completed``) into an event file of its own,
  ``events.out.tfevents.<seconds>.<microseconds>.<host>.<pid>.shipyard``; a process (a
  run) starts a new file, which sorts after the earlier runs' (readers take a directory's
  files in name order), and never touches an earlier one.
- With a master, a background thread copies the directory's new or grown files to
  ``tensorboard/experiment-<id>/trial-<id>/`` (``.../rank-<n>/`` for rank n) in the
  checkpoint storage every SYNC_INTERVAL_S, soon after each checkpoint, and once more when
  the context closes (waiting at most CLOSE_SYNC_TIMEOUT_S). It never deletes anything.

With ``SHIPYARD_TENSORBOARD`` unset, a run with a master does both (scalars and copy);
``0`` turns both off (the directory remains), ``1`` on; without a master neither happens
unless it is 1.

The scalars' CPU in the sender thread (bench/tensorboard_scalars.py, two cores): in pure
Python (_tfevents) about 20 µs a point for reports of one metric, 9 µs for reports of four;
that halved bench/metric_ingest.py's points a second. With numpy (_tfevents_numpy: a batch
at once, the same bytes) 1.1-1.4 µs and 0.4-0.7 µs, in batches of 1,000 to 10,000 points.
The numpy path is taken once numpy is imported (torch imports it) or after
NUMPY_AFTER_POINTS points.
"""

from __future__ import annotations

import functools
import os
import re
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shipyard.common.errors import InvalidRequest
from shipyard.common.tensorboard_layout import trial_prefix

if TYPE_CHECKING:  # the store is built on the sync thread, at the first file to copy
    from shipyard.storage import Store

ENV = "SHIPYARD_TENSORBOARD"
DIR_NAME = "tensorboard"
SYNC_INTERVAL_S = 30.0
CLOSE_SYNC_TIMEOUT_S = 30.0
_RANK_DIR = re.compile(r"rank-[0-9]+")
# The numpy path is taken once numpy is imported (torch imports it) or once this many points
# went the pure-Python way: importing numpy costs about as much CPU (0.15-0.25 s here), so a
# trial that reports little never pays for it.
NUMPY_AFTER_POINTS = 10_000


def enabled(*, with_master: bool) -> bool:
    """``SHIPYARD_TENSORBOARD``: "0" off, "1" on; unset, on only with a master. On means the
    chief writes Shipyard's scalars and, with a master, every rank's directory is copied."""
    value = os.environ.get(ENV, "").strip()
    if value == "":
        return with_master
    if value in ("0", "1"):
        return value == "1"
    raise InvalidRequest(f'environment variable {ENV} must be "0" or "1", got {value!r}')


def directory_of(workdir: str | Path, rank: int) -> Path:
    base = Path(workdir, DIR_NAME)
    return base if rank == 0 else base / f"rank-{rank}"


class ScalarWriter:
    """Shipyard's metrics as scalars in one event file of this process, opened at the first
    report. Called from the sender thread; a write that fails (a full disk) is said once on
    stderr and turns the writer off: metrics still reach the master."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._file: Any = None
        self._lock = threading.Lock()
        self._broken = False
        self._points = 0  # written in pure Python, up to NUMPY_AFTER_POINTS

    def write(self, reports: list[dict[str, Any]]) -> None:
        """Reports in the wire shape of ctx.train (group, steps_completed, metrics)."""
        if self._broken or not reports:
            return
        from shipyard.core import _tfevents

        with self._lock:
            try:
                if self._file is None:
                    self._open(_tfevents)
                now = time.time()
                data = None
                if self._points >= NUMPY_AFTER_POINTS or "numpy" in sys.modules:
                    fast = _numpy_path()
                    data = fast.scalars_events(now, reports) if fast is not None else None
                if data is None:  # no numpy yet, or a value it cannot hold: the same bytes
                    data = _tfevents.scalars_events(now, reports)
                    if self._points < NUMPY_AFTER_POINTS:
                        self._points += sum(len(report["metrics"]) for report in reports)
                self._file.write(data)
                self._file.flush()  # the sync thread copies what is on disk
            except OSError as exc:
                self._broken = True
                print(
                    f"[shipyard] TensorBoard scalars are no longer written to "
                    f"{self.directory}: {exc}",
                    file=sys.stderr,
                )

    def _open(self, tfevents: Any) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        import socket  # here: a trial that never reports does not pay for it

        now = time.time()
        host = socket.gethostname().replace("/", "_") or "host"
        # Seconds, then microseconds: the next run's file sorts after this one's.
        stamp = f"{int(now)}.{int(now % 1 * 1e6):06d}"
        stem = f"events.out.tfevents.{stamp}.{host}.{os.getpid()}"
        # Another context of this process, this second: a name that sorts after (readers
        # take a directory's files in name order).
        for attempt in range(1, 100):
            name = f"{stem}.shipyard" if attempt == 1 else f"{stem}.shipyard{attempt:02d}"
            try:
                self._file = open(self.directory / name, "xb")  # noqa: SIM115 - closed by close()
                break
            except FileExistsError:
                continue
        else:
            raise FileExistsError(f"{self.directory / stem}...: too many event files")
        self._file.write(tfevents.version_event(now))

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                try:
                    self._file.close()
                except OSError:
                    pass
                self._file = None
            self._broken = True  # a report after close is not written


@functools.cache
def _numpy_path() -> Any:
    """shipyard.core._tfevents_numpy, or None without numpy (looked for once)."""
    try:
        from shipyard.core import _tfevents_numpy
    except ImportError:
        return None
    return _tfevents_numpy


class Syncer:
    """Copies the new or grown files of ``directory`` to ``prefix/`` in a store, on its own
    thread: every ``interval_s``, soon after ``kick()``, and once more at ``close()``.

    What the store holds is listed once, so a restarted run sends only what changed since
    (its working directory is kept between runs on the same machine). A grown file is sent
    whole to a store without a local directory (S3), and only its new bytes, appended, to a
    shared file system; an earlier run's files are never removed. Errors are said on stderr
    (once each) and retried at the next pass."""

    def __init__(
        self,
        directory: Path,
        store: Callable[[], Store],
        prefix: str,
        *,
        skip_rank_dirs: bool,
        interval_s: float = SYNC_INTERVAL_S,
    ) -> None:
        self.directory = directory
        self.prefix = prefix
        self._make_store = store
        self._store: Store | None = None
        self._skip_rank_dirs = skip_rank_dirs
        self._interval_s = interval_s
        self._sent: dict[str, int] | None = None  # relative path -> bytes in the store
        self._seen: dict[str, tuple[int, int]] = {}  # relative path -> (size, mtime_ns) sent
        self._wake = threading.Event()
        self._stop = False
        self._said: set[str] = set()
        self.passes = 0  # completed passes, for tests
        self._thread = threading.Thread(target=self._run, name="shipyard-tensorboard", daemon=True)
        self._thread.start()

    def kick(self) -> None:
        """Sync soon (after a checkpoint); returns at once."""
        self._wake.set()

    def close(self, timeout_s: float = CLOSE_SYNC_TIMEOUT_S) -> None:
        """One last pass, waiting at most ``timeout_s``."""
        self._stop = True
        self._wake.set()
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            print(
                f"[shipyard] TensorBoard files of {self.directory} were not all copied to "
                f"the checkpoint storage within {timeout_s:.0f} s",
                file=sys.stderr,
            )

    def _run(self) -> None:
        while True:
            self._wake.wait(self._interval_s)
            self._wake.clear()
            stopping = self._stop
            try:
                self.sync_once()
            except Exception as exc:  # noqa: BLE001 - never ends the thread: retried next pass
                self._say(f"cannot copy TensorBoard files to the checkpoint storage: {exc}")
            self.passes += 1
            if stopping:
                return

    def sync_once(self) -> int:
        """Copy what is new or grown; returns how many files were sent."""
        files = self._local_files()
        if not files:
            return 0
        store = self._store
        if store is None:
            store = self._store = self._make_store()
        if self._sent is None:
            self._sent = {
                key.removeprefix(self.prefix + "/"): size
                for key, size in store.list(self.prefix).items()
            }
        sent = 0
        for relative, (size, mtime) in files.items():
            if self._seen.get(relative) == (size, mtime) or size == 0:
                continue
            if self._sent.get(relative) == size:
                self._seen[relative] = (size, mtime)
                continue
            self._copy(store, relative, size)
            self._seen[relative] = (size, mtime)
            sent += 1
        return sent

    def _local_files(self) -> dict[str, tuple[int, int]]:
        found: dict[str, tuple[int, int]] = {}
        if not self.directory.is_dir():
            return found
        for dirpath, dirnames, filenames in os.walk(self.directory):
            here = Path(dirpath)
            if self._skip_rank_dirs and here == self.directory:
                # Another rank's directory: that rank copies it (it may be on another node).
                dirnames[:] = [d for d in dirnames if not _RANK_DIR.fullmatch(d)]
            for name in filenames:
                if name.startswith("."):
                    continue  # a writer's temporary file
                try:
                    stat = (here / name).stat()
                except OSError:
                    continue  # removed meanwhile
                found[(here / name).relative_to(self.directory).as_posix()] = (
                    stat.st_size,
                    stat.st_mtime_ns,
                )
        return found

    def _copy(self, store: Store, relative: str, size: int) -> None:
        assert self._sent is not None
        key = f"{self.prefix}/{relative}"
        source = self.directory / relative
        target = store.local_dir(key)
        before = self._sent.get(relative, 0)
        if target is not None and before < size and max(_size(target), 0) == before:
            # A shared file system: append the new bytes in place (a running TensorBoard
            # sees the copy grow as it would the original; no temporary file beside it).
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(source, "rb") as src, open(target, "ab") as out:
                src.seek(before)
                left = size - before
                while left > 0 and (chunk := src.read(min(left, 1 << 20))):
                    out.write(chunk)
                    left -= len(chunk)
            self._sent[relative] = size - left
            return
        # A new file, or any file in an object store: the whole file (the trial keeps its
        # original, so a copy lost to a crash costs nothing).
        store.put(key, source, durable=False)
        self._sent[relative] = size

    def _say(self, message: str) -> None:
        if message not in self._said:
            self._said.add(message)
            print(f"[shipyard] {message}", file=sys.stderr)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return -1


class TensorBoard:
    """What ctx.train holds: the directory, and the writer and syncer when they are on."""

    def __init__(
        self, directory: Path, writer: ScalarWriter | None = None, syncer: Syncer | None = None
    ) -> None:
        self.directory = directory
        self.writer = writer
        self.syncer = syncer

    def path(self) -> Path:
        self.directory.mkdir(parents=True, exist_ok=True)
        return self.directory

    def write(self, reports: list[dict[str, Any]]) -> None:
        if self.writer is not None:
            self.writer.write(reports)

    def checkpointed(self) -> None:
        if self.syncer is not None:
            self.syncer.kick()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        if self.syncer is not None:
            self.syncer.close()


def make_tensorboard(
    *,
    workdir: str | Path,
    rank: int,
    with_master: bool,
    experiment_id: int | None,
    trial_id: int | None,
    store: Callable[[], Store],
) -> TensorBoard:
    directory = directory_of(workdir, rank)
    if not enabled(with_master=with_master):
        return TensorBoard(directory)
    writer = ScalarWriter(directory) if rank == 0 else None  # the chief reports
    syncer = None
    if with_master and experiment_id is not None and trial_id is not None:
        prefix = trial_prefix(experiment_id, trial_id, rank)
        syncer = Syncer(directory, store, prefix, skip_rank_dirs=rank == 0)
    return TensorBoard(directory, writer, syncer)
