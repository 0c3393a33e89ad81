"""The launcher's stdout, where the ranks' output is relayed: every line a rank writes goes
out as ``[rank=R] line``, one relay thread per pipe, flushed per line; the launcher's own
lines are ``[launcher] line``. The master parses these prefixes into the rank of each log
line (common/log_prefix.py)."""

from __future__ import annotations

import threading
import time
from typing import BinaryIO

from shipyard.common.log_prefix import LAUNCHER

MAX_LINE = 1 << 16  # a longer line (or a progress bar without newlines) is relayed in pieces
JOIN_S = 5.0  # how long the output of ranks that exited may take to drain


class Output:
    """The launcher's stdout, shared by the relay threads: whole lines, flushed one by one."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._lock = threading.Lock()

    def line(self, prefix: bytes, data: bytes) -> None:
        if not data.endswith(b"\n"):
            data += b"\n"  # a partial last line, or a piece of a very long one
        with self._lock:
            try:
                self._stream.write(prefix + data)
                self._stream.flush()
            except (BrokenPipeError, ValueError, OSError):
                pass  # nowhere to write to: the ranks must still run and be stopped

    def say(self, message: str) -> None:
        self.line(LAUNCHER.encode(), message.encode("utf-8", errors="replace"))


def relay(pipe: BinaryIO, prefix: bytes, out: Output) -> None:
    """Every line of ``pipe`` to ``out`` behind ``prefix``, until the pipe ends."""
    with pipe:
        while True:
            data = pipe.readline(MAX_LINE)
            if not data:
                return
            out.line(prefix, data)


def join_all(threads: list[threading.Thread], wait_s: float = JOIN_S) -> None:
    """Join the threads, all of them within ``wait_s``."""
    deadline = time.monotonic() + wait_s
    for thread in threads:
        thread.join(timeout=max(0.0, deadline - time.monotonic()))
