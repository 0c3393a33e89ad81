"""A run's code and config fetched from the master, for a node that does not share its disk
(retried for a minute while the master does not answer, as the trial's own calls are).

A code snapshot is content-addressed (its id is the sha256 of its archive), so a node keeps
each one once in its cache and the next trial of the experiment on that node downloads
nothing. Each trial unpacks it into a working directory of its own under the cache, made
once per trial: a restart on the same node keeps the files the trial wrote, as the master's
working directories do.

Each fetch also removes what no run has used for $SHIPYARD_CACHE_KEEP_DAYS (default 7, at
least 1): code snapshots, and trials' working directories (a trial resumed after that unpacks
its code again; its checkpoints are in the checkpoint storage, not here). A run holds a lock
on its directory while it runs, so a trial that runs for weeks keeps it.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shipyard.common import files
from shipyard.common.archives import MemberOutside, safe_extract_tar
from shipyard.common.errors import ShipyardError
from shipyard.common.node_env import CACHE_ENV, CACHE_KEEP_DAYS_ENV
from shipyard.core._retry import with_retry

MARKER = ".shipyard-context"
IN_USE = ".in-use"  # a lock file: held shared by the runs using what is beside it
KEEP_DAYS = 7.0
MIN_KEEP_DAYS = 1.0  # one experiment's setting cannot empty the cache of the node's others
_IN_USE: list[int] = []  # the locks this process holds until it exits


class CodeFetchError(ShipyardError):
    """The run's code or config could not be fetched from the master."""


@dataclass(frozen=True)
class RunFiles:
    workdir: Path
    config_path: Path
    downloaded_bytes: int  # 0: the node's cache had the code


def cache_dir(environ: Mapping[str, str]) -> Path:
    """$SHIPYARD_CACHE_DIR, else the user's cache directory, else one in /tmp (a container's
    user often has no writable home)."""
    if environ.get(CACHE_ENV):
        return Path(environ[CACHE_ENV])
    if environ.get("XDG_CACHE_HOME"):
        return Path(environ["XDG_CACHE_HOME"]) / "shipyard"
    home = Path(environ.get("HOME") or "/")
    if home != Path("/") and os.access(home, os.W_OK):
        return home / ".cache" / "shipyard"
    return Path(tempfile.gettempdir()) / f"shipyard-cache-{os.getuid()}"


def fetch(
    http: Any, trial_id: int, context_id: str, master_url: str, cache: Path, keep_days: float
) -> RunFiles:
    """The trial's working directory (its code unpacked) and its config file, on this node;
    what no run used for ``keep_days`` is removed from the cache first. The directory is
    marked in use for as long as this process lives (the run's entry)."""
    # Per master and trial: two masters' trial 7 on one node are two directories.
    run_dir = (
        cache / "trials" / f"{hashlib.sha256(master_url.encode()).hexdigest()[:12]}-{trial_id}"
    )
    _IN_USE.append(_hold(run_dir / IN_USE, fcntl.LOCK_SH))
    os.utime(run_dir)
    prune(cache, keep_days)
    workdir = run_dir / "code"
    downloaded = 0
    if not (workdir / MARKER).exists():  # unpacked by an earlier run: no archive needed
        # Snapshots in use: the prune of another run leaves them all alone meanwhile.
        contexts = _hold(cache / "contexts" / IN_USE, fcntl.LOCK_SH)
        try:
            archive, downloaded = _archive(http, trial_id, context_id, cache)
            workdir.mkdir(parents=True, exist_ok=True)
            if archive is not None:
                _unpack(archive, workdir)
        finally:
            os.close(contexts)
        (workdir / MARKER).write_text(context_id)
    config = with_retry(lambda: http.request("GET", f"/api/v1/trials/{trial_id}/config"))
    config_path = run_dir / "config.json"
    write_atomically(config_path, json.dumps(config).encode())
    return RunFiles(workdir, config_path, downloaded)


def _hold(lock_file: Path, how: int) -> int:
    """An open lock file, locked ``how`` (made with its directory if missing). A lock taken
    on a file a prune removed meanwhile is taken again on a new one."""
    while True:
        lock_file.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(fd, how)
        if os.fstat(fd).st_nlink:
            return fd
        os.close(fd)


def _archive(http: Any, trial_id: int, context_id: str, cache: Path) -> tuple[Path | None, int]:
    if not context_id:  # an experiment submitted without a code directory
        return None, 0
    path = cache / "contexts" / f"{context_id}.tar.gz"
    if path.is_file():
        os.utime(path)  # used now: the prune keeps it
        return path, 0
    data = with_retry(lambda: http.download(f"/api/v1/trials/{trial_id}/context", timeout_s=300.0))
    digest = hashlib.sha256(data).hexdigest()
    if digest != context_id:
        raise CodeFetchError(
            f"the code snapshot the master sent has sha256 {digest}, not {context_id}: "
            "it was changed on the way"
        )
    write_atomically(path, data)
    return path, len(data)


def keep_days(environ: Mapping[str, str]) -> float:
    """$SHIPYARD_CACHE_KEEP_DAYS (at least MIN_KEEP_DAYS), else KEEP_DAYS."""
    try:
        days = float(environ.get(CACHE_KEEP_DAYS_ENV) or KEEP_DAYS)
    except ValueError:
        return KEEP_DAYS
    return max(days, MIN_KEEP_DAYS)


def prune(cache: Path, days: float) -> list[Path]:
    """Remove the trials' directories and code snapshots last used more than ``days`` ago
    (their modification time: a run touches what it uses) that no run holds now (a run's
    entry keeps its directory's lock; one that is fetching code keeps the snapshots');
    returns what was removed."""
    cutoff = time.time() - days * 86400
    removed = []
    for run_dir in (cache / "trials").glob("*"):
        if _last_used(run_dir) < cutoff and _remove_unless_held(run_dir):
            removed.append(run_dir)
    archives = [a for a in (cache / "contexts").glob("*.tar.gz") if _last_used(a) < cutoff]
    if archives:
        lock = _try_hold(cache / "contexts" / IN_USE)
        if lock is not None:
            for archive in archives:
                archive.unlink(missing_ok=True)
            removed += archives
            os.close(lock)
    return removed


def _remove_unless_held(run_dir: Path) -> bool:
    lock = _try_hold(run_dir / IN_USE)
    if lock is None:
        return False  # a run of the trial is going on
    shutil.rmtree(run_dir, ignore_errors=True)
    os.close(lock)
    return True


def _try_hold(lock_file: Path) -> int | None:
    """The lock file locked for removal, or None while a run holds it."""
    try:
        fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o600)
    except FileNotFoundError:
        return None  # removed meanwhile by another prune
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def _last_used(entry: Path) -> float:
    try:
        return entry.stat().st_mtime
    except FileNotFoundError:
        return float("inf")  # gone already


def _unpack(archive: Path, dest: Path) -> None:
    try:
        safe_extract_tar(archive, dest)
    except MemberOutside as exc:
        raise CodeFetchError(
            f"the code snapshot's member {exc.member!r} points outside it"
        ) from exc


def write_atomically(path: Path, data: bytes) -> None:
    """Whole or absent: trials starting side by side on a node may write the same file. Only
    the user reads it; its directory is made if missing."""
    files.write_atomically(path, data, mode=0o600, parents=True)
