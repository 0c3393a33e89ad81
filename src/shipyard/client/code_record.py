"""What git says of the code an experiment is submitted from, as the experiment records it
(shipyard.client.git_capture makes the record; this decides where its diff goes).

A diff up to INLINE_DIFF_BYTES is kept in the record. A larger one is stored as a blob of
its own on the master (a one-file code snapshot, content-addressed like every snapshot, so
the same diff is stored once), and the user is told; one larger than the master takes is
recorded by its hash and size only, and the user is told that too. Never silently dropped,
and a submit never fails for it."""

from __future__ import annotations

import io
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from shipyard.client.contexts import (
    format_size,
    max_context_bytes,
    reproducible_archive,
    upload_context,
)
from shipyard.client.git_capture import capture_git
from shipyard.client.session import Session
from shipyard.common.errors import ShipyardError

INLINE_DIFF_BYTES = 512 * 1024
DIFF_BLOB_FILE = "git.diff"  # the one file of a diff's blob

Warn = Callable[[str], None]


def code_record(session: Session, directory: str | Path, warn: Warn) -> dict[str, Any] | None:
    """The record to send with the experiment (None: not a git work tree)."""
    captured = capture_git(directory)
    for message in captured.warnings:
        warn(message)
    record = captured.record
    if record is None or not captured.diff:
        return record
    size = len(captured.diff)
    if size <= INLINE_DIFF_BYTES:
        return {**record, "diff": captured.diff.decode("utf-8", errors="replace")}
    blob = _diff_blob(captured.diff)
    if len(blob) > max_context_bytes():
        warn(
            f"the uncommitted diff is {format_size(size)}, too large to store: the experiment "
            "records its hash and size only. Commit your changes to keep them."
        )
        return {**record, "diff_stored": False}
    try:
        uploaded = upload_context(session, blob)
    except ShipyardError as exc:
        warn(f"the uncommitted diff ({format_size(size)}) could not be stored: {exc}")
        return {**record, "diff_stored": False}
    warn(
        f"the uncommitted diff is {format_size(size)}, over {format_size(INLINE_DIFF_BYTES)}: "
        f"stored as blob {uploaded.id[:12]} beside the code snapshot."
    )
    return {**record, "diff_blob": uploaded.id}


def _diff_blob(diff: bytes) -> bytes:
    """The diff as a one-file archive, reproducibly (the same diff, the same id)."""

    def add_diff(tar: tarfile.TarFile) -> None:
        info = tarfile.TarInfo(DIFF_BLOB_FILE)
        info.size = len(diff)
        info.mode = 0o644
        tar.addfile(info, io.BytesIO(diff))

    return reproducible_archive(add_diff)
