"""A trial's output file on the master: read from an offset (local processes, Slurm jobs on a
shared file system, and the copies below), and filled, for backends whose trials print
elsewhere (Ray nodes, Kubernetes Pods), with a copy of what the run's sources printed."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import BinaryIO

from shipyard.common.files import read_from, write_atomically

MAX_READ = 1 << 20  # bytes per read: a huge log is handed over in pieces

Source = Callable[[int], bytes | None]
"""One source of a run's output (a node, a Pod): what it printed from an offset on, or None
when it cannot be read now (its node or cluster does not answer: the copy waits)."""


def read_lines(path: str, offset: int, final: bool = False) -> tuple[bytes, int]:
    """Bytes written since ``offset`` and the new offset: whole lines only, unless ``final``
    (the trial has exited, so a last line without a newline is complete too)."""
    chunk = read_from(path, offset, MAX_READ)
    if not final:
        chunk = _whole_lines(chunk, MAX_READ)
    return chunk, offset + len(chunk)


def _whole_lines(chunk: bytes, window: int | None) -> bytes:
    """The chunk up to its last newline. A full window without any newline (a progress bar
    redrawn with \\r) is taken whole rather than read again forever."""
    if b"\n" not in chunk and window is not None and len(chunk) >= window:
        return chunk
    return chunk[: chunk.rfind(b"\n") + 1]


class LogMirror:
    """Copies what a run's sources print into the run's one log file on the master, as the
    master reads that log (and a last time before the run's resources go).

    ``window``: the most bytes a source's read returns, or None when a read returns all the
    source has. A source read in windows is read again, when ``final``, until it has nothing
    more. A backend keeps one LogMirror: it holds a lock for each log it copies into.
    """

    def __init__(self, window: int | None = None) -> None:
        self.window = window
        self._lock = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}

    def start(self, log_path: str) -> None:
        """A new run's log: empty, with no offsets left by an earlier run of the same name."""
        path = Path(log_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")
        _offsets_path(log_path).unlink(missing_ok=True)

    def copy_bytes(self, log_path: str, source: Source, final: bool) -> None:
        """One source: the log is its copy byte for byte, so the log's size is the offset to
        read from and a partial last line is copied as it is (the next read goes on with it)."""
        with self._lock_of(log_path):
            while True:
                size = os.path.getsize(log_path) if os.path.exists(log_path) else 0
                data = source(size)
                if data is None:
                    return  # the master's copy is all there is for now
                if data:
                    with open(log_path, "ab") as f:
                        f.write(data)
                if not data or not final:
                    return

    def copy_lines(self, log_path: str, sources: Sequence[Source], final: bool) -> None:
        """Several sources: whole lines of each, so a line of one never splits a line of
        another; when ``final``, all of each, a last line without a newline ending with one.
        Each source's offset is kept beside the log (``<log>.offsets``) and written after
        the lines it counts, so a restarted master goes on where the last one stopped: no
        line is lost, and one is repeated only if the master died between the two writes."""
        with self._lock_of(log_path):
            offsets_file = _offsets_path(log_path)
            offsets = _read_offsets(offsets_file, len(sources))
            before = list(offsets)
            with open(log_path, "ab") as log:
                for index, source in enumerate(sources):
                    offsets[index] = self._copy_source(source, offsets[index], final, log)
            if offsets != before:
                write_atomically(offsets_file, json.dumps(offsets))

    def _copy_source(self, source: Source, offset: int, final: bool, log: BinaryIO) -> int:
        """Append the source's new lines to ``log``; returns its new offset. A final copy
        reads on until the source is empty and ends its last line with a newline (before
        the next source's); a line a window cuts in two is read again whole."""
        line_open = False  # a full window without a newline was copied: end it at the end
        while True:
            data = source(offset)
            if not data:  # None: unreadable for now; b"": nothing new
                if final and line_open:
                    log.write(b"\n")
                return offset
            whole = _whole_lines(data, self.window)
            if final and (not whole or self.window is None):  # all there is of the source
                log.write(data if data.endswith(b"\n") else data + b"\n")
                return offset + len(data)
            if whole:
                log.write(whole)
                offset += len(whole)
                line_open = not whole.endswith(b"\n")
            if not whole or not final:
                return offset

    def _lock_of(self, log_path: str) -> threading.Lock:
        with self._lock:
            return self._locks.setdefault(log_path, threading.Lock())


def _offsets_path(log_path: str) -> Path:
    return Path(f"{log_path}.offsets")


def _read_offsets(path: Path, count: int) -> list[int]:
    """The sources' offsets: a JSON list, one a source; a master before this module wrote a
    Kubernetes run's as {"<group>": offset}, which a re-attached run's log still has."""
    try:
        stored = json.loads(path.read_text())
        if isinstance(stored, dict):
            return [int(stored.get(str(index), 0)) for index in range(count)]
        if isinstance(stored, list) and len(stored) == count:
            return [int(offset) for offset in stored]
    except (OSError, ValueError, TypeError):
        pass
    return [0] * count
