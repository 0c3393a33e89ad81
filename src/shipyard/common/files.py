"""Small files that record a state across processes and restarts (a pid, an exit code, a
job id, a checkpoint's manifest): read without raising, replaced in one step. Standard
library and shipyard.common only: the trial side and the nodes of a cluster import it too."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from shipyard.common.archives import escapes


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
    path: str | Path,
    content: str | bytes,
    *,
    mode: int | None = None,
    durable: bool = False,
    parents: bool = False,
) -> None:
    """Replace the file with ``content`` (text is written as UTF-8) in one step: a reader
    sees the old content or the new, never a part. The temporary file is hidden, named by
    the process and a random part (several processes, also in containers whose pids repeat,
    may write the same file at once) and removed when the write fails. ``mode``: the file's
    permissions (else the umask's default); ``durable``: on disk (fsync) before it replaces
    the old file; ``parents``: the missing directories above it are made."""
    target = Path(path)
    if parents:
        target.parent.mkdir(parents=True, exist_ok=True)
    data = content.encode("utf-8") if isinstance(content, str) else content
    temporary = target.with_name(f".{target.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666 if mode is None else mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            if mode is not None:
                os.fchmod(handle.fileno(), mode)  # the umask applied to O_CREAT's mode
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)


def write_private_files(directory: Path, files: Mapping[str, str]) -> None:
    """Write each {path relative to ``directory``: text} for its owner alone: directories
    0700, files 0600, none replacing a file already there. A path that would leave
    ``directory`` (absolute, or with `..`) is a ValueError, and nothing more is written."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(directory, 0o700)
    for relative, text in files.items():
        if escapes(relative):
            raise ValueError(f"{relative!r} points outside {directory}")
        path = directory / relative
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
