"""Wakes trial long-polls (preempt/stop) the moment the master changes a trial's flags.

The flags themselves live in the trials table; this hub only carries "look again" from
the orchestrator thread to the asyncio handlers waiting on /trials/{id}/signals.
"""

from __future__ import annotations

import asyncio
import threading
import time


class SignalHub:
    def __init__(self) -> None:
        # Versions start from this master's start time, so a version a trial remembers from
        # before a master restart never equals a new one by chance.
        self._epoch = time.time_ns()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._versions: dict[int, int] = {}
        self._events: dict[int, asyncio.Event] = {}
        self._lock = threading.Lock()
        self._closing = False

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    def version(self, trial_id: int) -> int:
        with self._lock:
            return self._versions.get(trial_id, self._epoch)

    def bump(self, trial_id: int) -> None:
        """Thread-safe: called from the orchestrator when a trial's flags changed."""
        with self._lock:
            self._versions[trial_id] = self._versions.get(trial_id, self._epoch) + 1
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._wake, trial_id)

    def _wake(self, trial_id: int) -> None:
        event = self._events.pop(trial_id, None)
        if event is not None:
            event.set()

    def release_all(self) -> None:
        """The master is stopping: answer every long-poll now, so the server's graceful
        shutdown does not wait for them (trials ask again and reach the next master)."""
        self._closing = True
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._wake_all)

    def _wake_all(self) -> None:
        events, self._events = self._events, {}
        for event in events.values():
            event.set()

    async def wait(self, trial_id: int, known_version: int, timeout: float) -> None:
        """Return when the trial's version differs from known_version, or after timeout."""
        if self._closing or self.version(trial_id) != known_version:
            return
        event = self._events.setdefault(trial_id, asyncio.Event())
        try:
            await asyncio.wait_for(event.wait(), timeout)
        except TimeoutError:
            pass
