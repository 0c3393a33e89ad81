"""One background long-poll for the master's signals to a trial (preempt, stop).

Started on the first should_preempt()/should_stop() call; the calls only ever read cached
flags. The thread's first question does not wait, so the flags are current within one round
trip, and the trial is not held up for that round trip: a flag set before the run started
(a stop the searcher sent before a restart) is seen a few milliseconds later, as a flag set
while it runs would be.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from shipyard.common.errors import ShipyardError
from shipyard.core._retry import MAX_RETRY_DELAY_S

if TYPE_CHECKING:
    from shipyard.core._heartbeat import Heartbeat
    from shipyard.core._http import JsonHttp

LONG_POLL_S = 30
FIRST_ASK_TIMEOUT_S = 5.0


class SignalPoller:
    def __init__(
        self,
        http: JsonHttp,
        trial_id: int,
        target: int | None = None,
        heartbeat: Heartbeat | None = None,
    ) -> None:
        self._http = http
        self._path = f"/api/v1/trials/{trial_id}/signals"
        self._version = 0
        self.preempt = False
        self.stop = False
        self.target = target  # the searcher's current target length for this trial
        self._lock = threading.Lock()
        self._changed = threading.Condition()
        self._started = False
        self._closing = threading.Event()
        self._heartbeat = heartbeat

    def ensure_started(self) -> None:
        """Called by should_preempt()/should_stop(): the training loop is alive."""
        if self._heartbeat is not None:
            self._heartbeat.touch()
        if self._started:
            return
        with self._lock:
            if self._started:
                return
            thread = threading.Thread(target=self._run, name="shipyard-signals", daemon=True)
            thread.start()
            self._started = True

    def close(self) -> None:
        # The thread may sit in a long-poll for up to 30 s; it is a daemon, so don't wait.
        self._closing.set()

    def _ask(self, *, wait_s: int, timeout_s: float) -> None:
        answer = self._http.request(
            "GET", f"{self._path}?wait_s={wait_s}&version={self._version}", timeout_s=timeout_s
        )
        if isinstance(answer, dict):
            self.update(answer)
            version = answer.get("version")
            if isinstance(version, int):
                self._version = version

    def update(self, answer: dict) -> None:
        """Take the flags of a master's answer and wake whoever waits for a change."""
        with self._changed:
            self.preempt = bool(answer.get("preempt", self.preempt))
            # A stop is never taken back and a target only grows: an answer read before a
            # newer one (the long-poll against POST /searcher/wait) must not undo it.
            self.stop = self.stop or bool(answer.get("stop", False))
            target = answer.get("target")
            if isinstance(target, int) and (self.target is None or target > self.target):
                self.target = target
            self._changed.notify_all()

    def wait_for(self, predicate: Callable[[], bool], timeout_s: float) -> bool:
        """Block until predicate() holds after an answer, or timeout; returns predicate()."""
        self.ensure_started()
        with self._changed:
            return self._changed.wait_for(predicate, timeout_s)

    def _run(self) -> None:
        try:
            self._ask(wait_s=0, timeout_s=FIRST_ASK_TIMEOUT_S)
        except ShipyardError as exc:
            # Not fatal: the flags stay False and the long-poll below keeps asking.
            print(f"[shipyard] cannot read signals from the master yet: {exc}", file=sys.stderr)
        while not self._closing.is_set():
            try:
                self._ask(wait_s=LONG_POLL_S, timeout_s=LONG_POLL_S + 15)
            except ShipyardError:
                # Master restarting or briefly unreachable: ask again soon (a preemption
                # decided right after a restart should not wait for a backoff).
                self._closing.wait(MAX_RETRY_DELAY_S)
