"""A run's code and config fetched from the master, for a node that does not share its disk
(retried for a minute while the master does not answer, as the trial's own calls are).

A code snapshot is content-addressed (its id is the sha256 of its archive), so a node keeps
each one once in its cache and the next trial of the experiment on that node downloads
nothing. Each trial unpacks it into a working directory of its own under the cache, made
once per trial: a restart on the same node keeps the files the trial wrote, as the master's
working directories do.

Each fetch also removes what no run has used for $SHIPYARD_CACHE_KEEP_DAYS (default 7): code
snapshots, and trials' working directories (a trial resumed after that unpacks its code
again; its checkpoints are in the checkpoint storage, not here).
"""

from __future__ import annotations

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
KEEP_DAYS = 7.0


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
    what no run used for ``keep_days`` is removed from the cache first."""
    # Per master and trial: two masters' trial 7 on one node are two directories.
    run_dir = (
        cache / "trials" / f"{hashlib.sha256(master_url.encode()).hexdigest()[:12]}-{trial_id}"
    )
    if run_dir.exists():
        os.utime(run_dir)  # in use: kept by the prune
    prune(cache, keep_days)
    workdir = run_dir / "code"
    downloaded = 0
    if not (workdir / MARKER).exists():  # unpacked by an earlier run: no archive needed
        archive, downloaded = _archive(http, trial_id, context_id, cache)
        workdir.mkdir(parents=True, exist_ok=True)
        if archive is not None:
            _unpack(archive, workdir)
        (workdir / MARKER).write_text(context_id)
    config = with_retry(lambda: http.request("GET", f"/api/v1/trials/{trial_id}/config"))
    config_path = run_dir / "config.json"
    write_atomically(config_path, json.dumps(config).encode())
    return RunFiles(workdir, config_path, downloaded)


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
    """$SHIPYARD_CACHE_KEEP_DAYS, else KEEP_DAYS (one that is not a number: KEEP_DAYS)."""
    try:
        return float(environ.get(CACHE_KEEP_DAYS_ENV) or KEEP_DAYS)
    except ValueError:
        return KEEP_DAYS


def prune(cache: Path, days: float) -> list[Path]:
    """Remove the code snapshots and trials' directories last used more than ``days`` ago
    (their modification time: a run touches what it uses); returns what was removed. Another
    process removing the same entry at once is no error."""
    cutoff = time.time() - days * 86400
    old = [
        entry
        for entry in [*(cache / "contexts").glob("*.tar.gz"), *(cache / "trials").glob("*")]
        if _last_used(entry) < cutoff
    ]
    for entry in old:
        if entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
    return old


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
