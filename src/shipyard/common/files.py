"""Small files that record a state across processes and restarts (a pid, an exit code, a
job id, a checkpoint's manifest): read without raising, replaced in one step. Standard
library only: the trial side and the nodes of a cluster import it too."""

from __future__ import annotations

import os
from pathlib import Path


def read_int(path: str | Path) -> int | None:
    """The integer the file holds (white space around it ignored); None when the file is
    missing or unreadable, or holds anything else (e.g. it is still being written)."""
    try:
        return int(Path(path).read_text().strip())
    except (OSError, ValueError):
        return None


def read_from(path: str | Path, offset: int, limit: int) -> bytes:
    """At most ``limit`` bytes of the file from ``offset`` on; none when it does not exist
    (yet)."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read(limit)
    except FileNotFoundError:
        return b""


def write_atomically(
    path: str | Path, text: str, *, mode: int | None = None, durable: bool = False
) -> None:
    """Replace the file with ``text`` in one step: a reader sees the old content or the new,
    never a part. The temporary file is hidden and named by the process, so writers in
    several processes never share one. ``mode``: the file's permissions (else the umask's
    default); ``durable``: on disk (fsync) before it replaces the old file."""
    target = Path(path)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    if mode is None:
        handle = open(temporary, "w", encoding="utf-8")
    else:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        handle = os.fdopen(fd, "w", encoding="utf-8")
        os.chmod(temporary, mode)  # O_CREAT's mode does not apply to a file left by a crash
    with handle:
        handle.write(text)
        if durable:
            handle.flush()
            os.fsync(handle.fileno())
    os.replace(temporary, target)
