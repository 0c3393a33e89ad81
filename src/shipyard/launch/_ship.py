"""A run's output sent to the master over HTTP, for a node whose files the master cannot read.

The output is cut into whole lines, numbered from 0 per (run, source): a source is one
node's stream of a gang (its node rank), each rank's lines inside it carrying the rank
prefix the launchers write. A batch names the number of its first line, so the master
stores a line it already has (a batch resent after a lost answer) only once. Batches go
every INTERVAL_S, or sooner when MAX_BATCH_BYTES are waiting; a master that does not answer
is retried with a growing pause while the lines wait in memory.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

from shipyard.common.errors import MasterUnavailable, ShipyardError

INTERVAL_S = 0.5
MAX_BATCH_BYTES = 256 * 1024
MAX_BATCH_LINES = 10_000  # well under what the master takes in one batch (api.LogBatch)
MAX_PAUSE_S = 5.0


class LogShipper:
    """``write`` takes raw output from any thread; a thread of its own sends it."""

    def __init__(self, http: Any, trial_id: int, run_id: int, source: int = 0) -> None:
        self._http = http
        self._path = f"/api/v1/trials/{trial_id}/logs"
        self._run_id = run_id
        self._source = source
        self._partial = b""  # the start of a line whose newline has not come yet
        self._pending: list[str] = []
        self._pending_bytes = 0
        self._sent = 0  # lines the master has stored: the number of the next batch's first
        self._closing = False
        self._refused = False  # the master refuses this run's lines: keep none
        self._wake = threading.Condition()
        self._thread = threading.Thread(target=self._run, daemon=True, name="log-shipper")
        self._thread.start()

    def write(self, data: bytes) -> None:
        with self._wake:
            *lines, self._partial = (self._partial + data).split(b"\n")
            self._add(lines)

    def flush(self) -> None:
        """Lines go in batches: nothing to do here (the relay calls it after each write)."""

    def close(self, timeout_s: float) -> bool:
        """Send what is left (a last line without its newline too); True if all got there."""
        with self._wake:
            if self._partial:
                self._add([self._partial])
                self._partial = b""
            self._closing = True
            self._wake.notify()
        self._thread.join(timeout_s)
        return not self._thread.is_alive() and not self._pending

    def _add(self, lines: list[bytes]) -> None:
        if not lines or self._refused:
            return
        # A line ending \r\n is stored without its \r, as the master's file tail stores it.
        texts = [line.decode("utf-8", errors="replace").removesuffix("\r") for line in lines]
        self._pending.extend(texts)
        self._pending_bytes += _size(texts)
        if self._pending_bytes >= MAX_BATCH_BYTES:
            self._wake.notify()

    def _run(self) -> None:
        pause = INTERVAL_S
        while True:
            with self._wake:
                if not self._closing and self._pending_bytes < MAX_BATCH_BYTES:
                    self._wake.wait(INTERVAL_S)
                batch = self._batch()
                done = self._closing and not self._pending
            if batch:
                try:
                    self._send(batch)
                    pause = INTERVAL_S
                except MasterUnavailable:
                    # Waited out here, not in the wait above: a full buffer skips that one.
                    pause = min(pause * 2, MAX_PAUSE_S)
                    time.sleep(pause)
                except ShipyardError as exc:  # refused (the run is over, a bad token): stop
                    print(f"shipyard: the master refuses this run's output: {exc}", file=sys.stderr)
                    with self._wake:
                        self._refused = True
                        self._pending.clear()
                        self._pending_bytes = 0
                    return
            if done:
                return

    def _batch(self) -> list[str]:
        batch: list[str] = []
        size = 0
        for line in self._pending:
            line_size = len(line.encode()) + 1
            if batch and (size + line_size > MAX_BATCH_BYTES or len(batch) >= MAX_BATCH_LINES):
                break
            batch.append(line)
            size += line_size
        return batch

    def _send(self, batch: list[str]) -> None:
        body = {
            "run_id": self._run_id,
            "source": self._source,
            "first_line": self._sent,
            "lines": batch,
        }
        self._http.request("POST", self._path, body, timeout_s=30.0)
        with self._wake:
            del self._pending[: len(batch)]
            self._pending_bytes -= _size(batch)
            self._sent += len(batch)


def _size(lines: list[str]) -> int:
    return sum(len(line.encode()) + 1 for line in lines)
