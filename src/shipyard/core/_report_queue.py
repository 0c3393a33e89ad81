"""The queue and sender thread behind ctx.train: reporting returns at once, delivery is batched.

The training thread only validates and enqueues. One daemon thread takes everything queued at
that moment and hands the batch to ``deliver``: printing in local mode, a POST to the master
otherwise. The first report leaves at once; after a delivery the sender gathers for at least
``min_interval_s`` before the next one, so a loop reporting every step costs the master a few
requests a second, not one per step.
"""

from __future__ import annotations

import queue
import sys
import threading
import time
from abc import ABC, abstractmethod
from typing import Any

from shipyard.common.errors import Conflict, MasterUnavailable

# Per delivery at most this many points (metric values; a report of none counts as one):
# about 250 KB of JSON as columns, well under any proxy's body limit, and a loop reporting
# at full speed costs the master one POST and one commit per 10,000 points. With 1,000
# reports (2,000 points) a POST, bench/metric_ingest.py stored a quarter fewer points a second.
MAX_BATCH_POINTS = 10_000
BEHIND = 1_000  # items queued: the sender is behind already and does not wait to gather


class _Progress:
    __slots__ = ("fraction",)

    def __init__(self, fraction: float) -> None:
        self.fraction = fraction


_STOP = object()


class ReportQueue(ABC):
    """Owns the queue and the sender thread; subclasses say how a batch is delivered."""

    thread_name = "shipyard-report-sender"
    min_interval_s = 0.0  # between two deliveries; a flush or a close never waits for it

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._failure: BaseException | None = None
        self._closed = False
        self._last_delivery = float("-inf")
        self._urgent = threading.Event()  # a flush or close is waiting: deliver now

    @abstractmethod
    def deliver(self, reports: list[dict[str, Any]], progress: float | None) -> None:
        """Deliver one batch (runs on the sender thread); raise to give up for good."""

    # --- calling (training) thread -------------------------------------------------------

    def enqueue_report(self, report: dict[str, Any]) -> None:
        self._check_usable()
        self._queue.put(report)

    def enqueue_progress(self, fraction: float) -> None:
        self._check_usable()
        self._queue.put(_Progress(fraction))

    def _check_usable(self) -> None:
        if self._failure is not None:
            raise MasterUnavailable(f"metrics can no longer be delivered: {self._failure}")
        if self._closed:
            raise Conflict(
                "this shipyard.core context is closed: report inside the "
                "`with shipyard.core.init() as ctx:` block"
            )
        if self._thread is None:
            self._start()

    def _start(self) -> None:
        with self._start_lock:
            if self._thread is None:
                thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)
                thread.start()
                self._thread = thread

    def flush(self, timeout_s: float) -> None:
        """Wait until everything reported so far is delivered; raise if it cannot be."""
        if self._thread is not None:
            done = threading.Event()
            self._queue.put(done)
            self._urgent.set()
            if not done.wait(timeout_s):
                raise MasterUnavailable(
                    f"metrics were not delivered within {timeout_s:.0f} s "
                    f"({self._queue.qsize()} items still queued)"
                )
        if self._failure is not None:
            raise MasterUnavailable(f"some metrics were not delivered: {self._failure}")

    def close(self, timeout_s: float) -> None:
        """Flush, then stop the sender thread. Reporting afterwards raises Conflict."""
        try:
            self.flush(timeout_s)
        finally:
            self._closed = True
            if self._thread is not None:
                self._queue.put(_STOP)
                self._urgent.set()
                self._thread.join(timeout=1.0)

    # --- sender thread --------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            reports: list[dict[str, Any]] = []
            points = 0
            progress: float | None = None
            flushed: list[threading.Event] = []
            stop = False
            item = self._queue.get()
            # Gather until min_interval_s has passed since the last delivery. The sender
            # sleeps meanwhile instead of waking for every report (that would take the GIL
            # from the training loop at each step); flush and close cut the sleep short.
            remaining = self._last_delivery + self.min_interval_s - time.monotonic()
            backlog = self._queue.qsize() >= BEHIND
            marker = isinstance(item, threading.Event) or item is _STOP
            if remaining > 0 and not backlog and not marker:
                self._urgent.wait(remaining)
            self._urgent.clear()
            while True:
                if item is _STOP:
                    stop = True
                    break
                if isinstance(item, threading.Event):
                    flushed.append(item)  # everything before the marker is in this batch
                    break
                if isinstance(item, _Progress):
                    progress = item.fraction  # only the newest progress matters
                else:
                    reports.append(item)
                    points += len(item["metrics"]) or 1
                if points >= MAX_BATCH_POINTS:
                    break
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
            if (reports or progress is not None) and self._failure is None:
                self._last_delivery = time.monotonic()
                try:
                    self.deliver(reports, progress)
                except BaseException as exc:  # kept, and raised on the training thread
                    self._failure = exc
                    print(f"[shipyard] cannot deliver metrics: {exc}", file=sys.stderr)
            for event in flushed:
                event.set()
            if stop:
                return
