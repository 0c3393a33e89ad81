"""The master's one control thread: every decision about trials is taken here, in order,
so no two threads ever race over a trial's state. HTTP handlers only record facts (a new
experiment, a metric, a pause) and wake this thread, saying why.

A wake runs only the phases its reasons concern (a validation needs the searcher, not the
scheduler); once every poll interval a pass runs them all, which also catches anything a
reason missed and checks deadlines. Housekeeping (checkpoint retention) runs every few
seconds, off the path from one trial's exit to the next trial's launch.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from shipyard.backends.pooled import PooledBackend
from shipyard.server.auth.tokens import TaskTokens
from shipyard.server.db import Database
from shipyard.server.orm import utcnow
from shipyard.server.pools import Pool
from shipyard.server.services import checkpoint_gc
from shipyard.server.services.signals import SignalHub
from shipyard.server.settings import Settings
from shipyard.server.workers.driver import ExperimentDriver
from shipyard.server.workers.supervisor import Supervisor

log = logging.getLogger(__name__)

HOUSEKEEPING_INTERVAL_S = 5.0


class Reason(StrEnum):
    EXIT = "exit"  # a trial process may have ended
    EVENT = "event"  # a searcher event was recorded (a validation)
    EXPERIMENT = "experiment"  # an experiment was created or changed state


class Orchestrator:
    def __init__(
        self,
        settings: Settings,
        db: Database,
        backend: PooledBackend,
        hub: SignalHub,
        pools: dict[str, Pool],
        task_tokens: TaskTokens | None = None,  # None: authentication is off
    ) -> None:
        self.settings = settings
        self.db = db
        self.backend = backend
        self.hub = hub
        self.driver = ExperimentDriver(db, settings.stop_grace_s)
        self.supervisor = Supervisor(settings, db, backend, hub, pools, task_tokens)
        self._reasons: set[Reason] = set()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="orchestrator", daemon=True)
        self._last_housekeeping = time.monotonic()
        self._retention_since = datetime.min.replace(tzinfo=UTC)  # first pass: everything
        backend.set_exit_listener(lambda: self.wake(Reason.EXIT))

    def start(self) -> None:
        self.supervisor.recover()
        self._last_housekeeping = time.monotonic() - HOUSEKEEPING_INTERVAL_S  # first pass now
        self._thread.start()

    def wake(self, reason: Reason) -> None:
        with self._lock:
            self._reasons.add(reason)
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=10)
        self.supervisor.shutdown()
        self.backend.close()

    def _run(self) -> None:
        last_full_pass = time.monotonic()
        while not self._stop.is_set():
            self._wake.wait(self.settings.poll_interval_s)
            self._wake.clear()
            with self._lock:
                reasons, self._reasons = self._reasons, set()
            if self._stop.is_set():
                return
            # A full pass every poll interval, even while wakes keep coming (trials that
            # report every few milliseconds): deadlines are checked only there.
            full = time.monotonic() - last_full_pass >= self.settings.poll_interval_s
            if full:
                last_full_pass = time.monotonic()
            try:
                self.step(None if full else reasons)
                self._housekeeping()
            except Exception:  # noqa: BLE001 - keep the master alive; the next step retries
                log.exception("orchestrator step failed")
                time.sleep(0.5)

    def step(self, reasons: set[Reason] | None = None) -> None:
        """One pass; `reasons` None means everything (the periodic pass)."""
        everything = reasons is None
        reasons = reasons or set()
        exited = self.supervisor.reap()
        changed = everything or exited > 0 or bool(reasons & {Reason.EVENT, Reason.EXPERIMENT})
        if changed:
            for trial_id in self.driver.step():
                self.hub.bump(trial_id)
            self.driver.finish_experiments()
        if everything or Reason.EXPERIMENT in reasons:
            self.supervisor.enforce()
        if changed:
            self.supervisor.schedule()
        self.supervisor.collect_logs()

    def _housekeeping(self) -> None:
        if time.monotonic() - self._last_housekeeping < HOUSEKEEPING_INTERVAL_S:
            return
        self._last_housekeeping = time.monotonic()
        for experiment_id, trial_id in self.supervisor.take_ended():
            checkpoint_gc.collect(self.db, experiment_id, trial_id)
        # Experiments that ended since the last pass (completed, errored, killed), and after
        # a master start every ended experiment: retention is idempotent.
        since, self._retention_since = self._retention_since, utcnow() - timedelta(seconds=1)
        for experiment_id in checkpoint_gc.experiments_ended_since(self.db, since):
            checkpoint_gc.collect(self.db, experiment_id)
