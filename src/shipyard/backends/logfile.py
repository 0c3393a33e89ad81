"""Reading a trial's output file from an offset, for backends whose trials write their output
to a file the master can read (local processes, Slurm jobs on a shared file system)."""

from __future__ import annotations

from shipyard.common.files import read_from

MAX_READ = 1 << 20  # bytes per read: a huge log is handed over in pieces


def read_lines(path: str, offset: int, final: bool = False) -> tuple[bytes, int]:
    """Bytes written since ``offset`` and the new offset: whole lines only, unless ``final``
    (the trial has exited, so a last line without a newline is complete too)."""
    chunk = read_from(path, offset, MAX_READ)
    if not final:
        # Keep a partial last line for the next read; a full window without any newline
        # (a progress bar redrawn with \r) is taken whole rather than re-read forever.
        end = chunk.rfind(b"\n")
        if end >= 0:
            chunk = chunk[: end + 1]
        elif len(chunk) < MAX_READ:
            chunk = b""
    return chunk, offset + len(chunk)
