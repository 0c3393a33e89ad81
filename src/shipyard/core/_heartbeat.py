"""The trial's heartbeat, for the master's heartbeat_timeout.

The training loop's calls into shipyard.core (reporting, should_preempt, should_stop) mark
it active: one attribute write, nothing else on the loop's path. A daemon thread sends one
beat per interval when the loop was active since the last beat. A loop stuck in a
deadlock stops calling, so the beats stop and the master kills and restarts the run; a
thread that merely lives on (like this one) cannot keep a hung trial alive.
"""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING

from shipyard.common.errors import ShipyardError

if TYPE_CHECKING:
    from shipyard.core._http import JsonHttp


class Heartbeat:
    def __init__(self, http: JsonHttp, trial_id: int, run_id: int, interval_s: float) -> None:
        self._http = http
        self._path = f"/api/v1/trials/{trial_id}/heartbeat"
        self._run_id = run_id
        self._interval_s = interval_s
        self._active = False
        self._closing = threading.Event()
        self._thread: threading.Thread | None = None

    def touch(self) -> None:
        self._active = True
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="shipyard-heartbeat", daemon=True
            )
            self._thread.start()

    def close(self) -> None:
        self._closing.set()

    def _run(self) -> None:
        while not self._closing.wait(self._interval_s):
            if not self._active:
                continue
            self._active = False
            try:
                self._http.request("POST", self._path, {"run_id": self._run_id}, timeout_s=5.0)
            except ShipyardError as exc:  # the master may be restarting: the next beat counts
                print(f"[shipyard] heartbeat not delivered: {exc}", file=sys.stderr)
