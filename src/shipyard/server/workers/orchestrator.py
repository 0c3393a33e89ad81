"""The master's one control thread: every decision about trials is taken here, in order,
so no two threads ever race over a trial's state. HTTP handlers only record facts (a new
experiment, a metric, a pause) and wake this thread."""

from __future__ import annotations

import logging
import threading
import time

from shipyard.backends.base import Backend
from shipyard.server.db import Database
from shipyard.server.services.signals import SignalHub
from shipyard.server.settings import Settings
from shipyard.server.workers.driver import ExperimentDriver
from shipyard.server.workers.supervisor import Supervisor

log = logging.getLogger(__name__)


class Orchestrator:
    def __init__(self, settings: Settings, db: Database, backend: Backend, hub: SignalHub) -> None:
        self.settings = settings
        self.backend = backend
        self.hub = hub
        self.driver = ExperimentDriver(db)
        self.supervisor = Supervisor(settings, db, backend, hub)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="orchestrator", daemon=True)
        backend.set_exit_listener(self.wake)

    def start(self) -> None:
        self.supervisor.recover()
        self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=10)
        self.supervisor.shutdown()
        self.backend.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.settings.poll_interval_s)
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                self.step()
            except Exception:  # noqa: BLE001 - keep the master alive; the next step retries
                log.exception("orchestrator step failed")
                time.sleep(0.5)

    def step(self) -> None:
        self.supervisor.reap()
        for trial_id in self.driver.step():
            self.hub.bump(trial_id)
        self.driver.finish_experiments()
        self.supervisor.enforce()
        self.supervisor.schedule()
        self.supervisor.collect_logs()
