"""Trial supervisor: launches scheduled trials, notices exits, restarts or ends trials,
carries pause/kill to running trials, and collects their output."""

from __future__ import annotations

import logging
import time
from datetime import timedelta

from sqlalchemy import select

from shipyard.backends.base import Backend, Handle, LogSource, RunState, RunStatus, Slot
from shipyard.common.states import ExperimentState, TrialState
from shipyard.search import ExitReason
from shipyard.search.registry import full_length
from shipyard.server import orm
from shipyard.server.db import Database
from shipyard.server.orm import utcnow
from shipyard.server.services import jobs, logs, searching
from shipyard.server.services.signals import SignalHub
from shipyard.server.settings import Settings
from shipyard.server.workers import scheduler
from shipyard.server.workers.launcher import build_spec

log = logging.getLogger(__name__)


def _reached_max_length(trial: orm.Trial, exp: orm.Experiment) -> bool:
    """It trained as far as its search lets any trial (in the searcher's time unit)."""
    length = full_length(exp.config.get("searcher", {}))
    if length is None:
        return False
    time = trial.steps_completed if trial.searcher_time is None else trial.searcher_time
    return time >= length


def _end_run(session, trial: orm.Trial, how: str) -> None:
    """Record how the trial's current run ended (runs launched before migration 0003
    have no row)."""
    run = session.get(orm.TrialRun, (trial.id, trial.run_id))
    if run is not None:
        run.ended_at = utcnow()
        run.ended_how = how


def _describe_exit(state: RunState) -> str:
    if state.status == RunStatus.LOST:
        return "the trial's process was lost (no exit code)"
    code = state.exit_code
    if code is not None and code < 0:
        return f"killed by signal {-code}"
    return f"exited with code {code}"


class Supervisor:
    def __init__(self, settings: Settings, db: Database, backend: Backend, hub: SignalHub) -> None:
        self.settings = settings
        self.db = db
        self.backend = backend
        self.hub = hub
        self.slots = {s.id: s for s in backend.capacity()}
        self.handles: dict[int, Handle] = {}
        self.offsets: dict[int, int] = {}
        self.terminating: set[int] = set()
        self.ended: list[tuple[int, int]] = []  # (experiment, trial) awaiting retention
        self._last_logs = 0.0

    # -- after a master restart ------------------------------------------------------

    def recover(self) -> None:
        """Re-attach to every trial the database says is running, before scheduling."""
        with self.db.write() as s:
            for trial in s.scalars(select(orm.Trial).where(orm.Trial.state.in_(jobs.HOLDING))):
                handle = self.backend.recover(trial.handle) if trial.handle else None
                if handle is None and trial.stop_requested:
                    # The searcher had stopped it: lost now, it ends as stopped.
                    trial.state = TrialState.STOPPED
                    trial.ended_at = utcnow()
                    trial.slots = []
                    trial.handle = None
                    s.add(searching.exit_event(trial, ExitReason.STOPPED))
                    _end_run(s, trial, "lost while the master was down; stopped by the searcher")
                    continue
                if handle is None:
                    log.warning("trial %s was not found after the restart; requeued", trial.id)
                    trial.state = TrialState.QUEUED
                    trial.slots = []
                    trial.handle = None
                    trial.exit_reason = (
                        "lost while the master was down; resumed from its checkpoint"
                    )
                    _end_run(s, trial, trial.exit_reason)
                    continue
                trial.state = TrialState.RUNNING
                self.handles[trial.id] = handle
                self.offsets[trial.id] = trial.log_offset

    # -- launching ------------------------------------------------------------------------

    def schedule(self) -> int:
        with self.db.read() as s:
            has_queued = s.scalar(select(orm.Trial.id).where(jobs.LAUNCHABLE).limit(1))
        if has_queued is None:
            return 0
        launches = []
        with self.db.write() as s:
            holding = jobs.holding(s)
            busy = {slot for t in holding for slot in t.slots or []}
            used = jobs.slots_in_use(holding)
            free = [slot for sid, slot in self.slots.items() if sid not in busy]
            if not free:
                return 0
            rows = s.execute(
                select(orm.Trial, orm.Experiment)
                .join(orm.Experiment, orm.Experiment.id == orm.Trial.experiment_id)
                .where(jobs.LAUNCHABLE, orm.Experiment.state == ExperimentState.ACTIVE)
            ).all()
            requests = [jobs.request_for(t, e) for t, e in rows]
            placed = scheduler.assign(requests, free, used)
            for trial, exp in rows:
                if trial.id not in placed:
                    continue
                trial.state = TrialState.STARTING
                trial.slots = [slot.id for slot in placed[trial.id]]
                trial.run_id += 1
                trial.log_offset = 0
                trial.log_lines = 0
                trial.preempt_requested = False
                trial.preempt_deadline = None
                trial.waiting_for_searcher = False
                trial.run_error = None
                trial.last_heartbeat = utcnow()
                trial.started_at = trial.started_at or utcnow()
                s.add(orm.TrialRun(trial_id=trial.id, run_id=trial.run_id, slots=trial.slots))
                launches.append((trial, exp, placed[trial.id]))
        for trial, exp, slots in launches:
            handle = self._launch(trial, exp, slots)
            if handle is None:
                continue
            # Recorded at once: a master that dies now finds this process on restart
            # instead of launching the run a second time.
            with self.db.write() as s:
                row = s.get(orm.Trial, trial.id)
                row.handle = handle.data
                if row.state == TrialState.STARTING:
                    row.state = TrialState.RUNNING
        return len(launches)

    def _launch(self, trial: orm.Trial, exp: orm.Experiment, slots: list[Slot]) -> Handle | None:
        try:
            handle = self.backend.launch(build_spec(self.settings, exp, trial, slots))
        except Exception as exc:  # noqa: BLE001 - any launch failure is the trial's failure
            log.exception("launching trial %s failed", trial.id)
            self._on_exit(trial.id, RunState(RunStatus.LOST), reason=f"launch failed: {exc}")
            return None
        self.handles[trial.id] = handle
        self.offsets[trial.id] = 0
        return handle

    # -- exits ----------------------------------------------------------------------------

    def reap(self) -> int:
        ended = 0
        for trial_id, handle in list(self.handles.items()):
            state = self.backend.poll(handle)
            if state.status != RunStatus.RUNNING:
                self._on_exit(trial_id, state)
                ended += 1
        return ended

    def _on_exit(self, trial_id: int, state: RunState, reason: str | None = None) -> None:
        handle = self.handles.pop(trial_id, None)
        if handle is not None:
            self.backend.release(handle)
            self._collect(trial_id, handle, final=True)
        self.offsets.pop(trial_id, None)
        self.terminating.discard(trial_id)
        reason = reason or _describe_exit(state)
        ended = False
        with self.db.write() as s:
            trial = s.get(orm.Trial, trial_id)
            if trial.run_error:
                reason = f"{reason}: {trial.run_error}"  # what the trial said went wrong
            exp = s.get(orm.Experiment, trial.experiment_id)
            trial.handle = None
            trial.slots = []
            max_restarts = exp.config.get("max_restarts", 5)
            clean_exit = state.status == RunStatus.EXITED and state.exit_code == 0
            if ExperimentState(exp.state) == ExperimentState.CANCELED:
                trial.state = TrialState.CANCELED
                trial.exit_reason = "the experiment was killed"
                outcome = "canceled: the experiment was killed"
                s.add(searching.exit_event(trial, ExitReason.CANCELED))
            elif trial.stop_requested:
                # The searcher stopped it: after its final checkpoint, or terminated when
                # the grace period ran out, it ends as the searcher's decision.
                trial.state = TrialState.STOPPED
                if not clean_exit:
                    trial.exit_reason = f"{trial.exit_reason}; then {reason}"
                outcome = "stopped by the searcher"
                s.add(searching.exit_event(trial, ExitReason.STOPPED))
            elif (
                clean_exit
                and not trial.waiting_for_searcher
                and (not trial.preempt_requested or _reached_max_length(trial, exp))
            ):
                # A trial that finished its work ends, even if a pause came meanwhile.
                trial.state = TrialState.COMPLETED
                trial.exit_reason = None
                trial.preempt_requested = False
                trial.preempt_deadline = None
                outcome = "completed"
                s.add(searching.exit_event(trial, ExitReason.COMPLETED))
            elif trial.preempt_requested or (clean_exit and trial.waiting_for_searcher):
                # Preempted (it resumes from its checkpoint), or it reached its searcher
                # target and waits for the next one: either way it holds no slot.
                outcome = (
                    "waits for the searcher's next target"
                    if trial.waiting_for_searcher
                    else "preempted: resumes from its checkpoint"
                )
                trial.preempt_requested = False
                trial.preempt_deadline = None
                paused = ExperimentState(exp.state) == ExperimentState.PAUSED
                trial.state = TrialState.PAUSED if paused else TrialState.QUEUED
            elif trial.restarts < max_restarts:
                trial.restarts += 1
                trial.state = TrialState.QUEUED
                outcome = f"restart {trial.restarts} of {max_restarts}"
                trial.exit_reason = f"{reason}; {outcome}"
            else:
                trial.state = TrialState.ERRORED
                outcome = f"no restarts left (max_restarts: {max_restarts})"
                trial.exit_reason = f"{reason}; {outcome}"
                s.add(searching.exit_event(trial, ExitReason.ERRORED))
            _end_run(s, trial, f"{reason}; {outcome}")
            if TrialState(trial.state).terminal:
                trial.ended_at = utcnow()
                ended = True
            exp_id = exp.id
        if ended:
            self.ended.append((exp_id, trial_id))

    def take_ended(self) -> list[tuple[int, int]]:
        ended, self.ended = self.ended, []
        return ended

    # -- pause, kill, preemption timeouts ---------------------------------------------------

    def enforce(self) -> None:
        if not self.handles:
            return
        now = utcnow()
        to_wake: list[int] = []
        to_kill: list[int] = []
        with self.db.read() as s:
            rows = s.execute(
                select(orm.Trial, orm.Experiment.state)
                .join(orm.Experiment, orm.Experiment.id == orm.Trial.experiment_id)
                .where(orm.Trial.id.in_(list(self.handles)))
            ).all()
        needs_flag = []
        for trial, exp_state in rows:
            state = ExperimentState(exp_state)
            if state == ExperimentState.CANCELED:
                to_kill.append(trial.id)
            elif trial.stop_deadline is not None and trial.stop_deadline < now:
                to_kill.append(trial.id)  # the searcher stopped it and it did not exit in time
            elif state == ExperimentState.PAUSED and trial.preempt_deadline is None:
                needs_flag.append(trial.id)
            elif state == ExperimentState.PAUSED and trial.preempt_deadline < now:
                to_kill.append(trial.id)  # it did not stop in time: it resumes from its checkpoint
        if needs_flag:
            deadline = now + timedelta(seconds=self.settings.preempt_timeout_s)
            with self.db.write() as s:
                for trial_id in needs_flag:
                    trial = s.get(orm.Trial, trial_id)
                    exp = s.get(orm.Experiment, trial.experiment_id)
                    if ExperimentState(exp.state) != ExperimentState.PAUSED:
                        continue  # activated meanwhile
                    trial.preempt_requested = True
                    trial.preempt_deadline = deadline
                    to_wake.append(trial_id)
        for trial_id in to_wake:
            self.hub.bump(trial_id)
        for trial_id in to_kill:
            if trial_id not in self.terminating and trial_id in self.handles:
                self.terminating.add(trial_id)
                self.backend.terminate(self.handles[trial_id], self.settings.kill_grace_s)

    # -- output -----------------------------------------------------------------------------

    def collect_logs(self, min_interval_s: float = 0.5) -> None:
        if time.monotonic() - self._last_logs < min_interval_s:
            return
        self._last_logs = time.monotonic()
        for trial_id, handle in list(self.handles.items()):
            self._collect(trial_id, handle)

    def _collect(self, trial_id: int, handle: Handle, final: bool = False) -> None:
        """Store what the trial printed since the last read; after its exit, all of it."""
        if not isinstance(self.backend, LogSource):
            return
        while True:
            offset = self.offsets.get(trial_id, 0)
            chunk, new_offset = self.backend.read_output(handle, offset, final=final)
            if not chunk:
                return
            with self.db.write() as s:
                logs.append(s.get(orm.Trial, trial_id), chunk, new_offset, session=s)
            self.offsets[trial_id] = new_offset
            if not final:
                return

    def shutdown(self) -> None:
        """Flush output of running trials; they keep running and are re-attached later."""
        for trial_id, handle in list(self.handles.items()):
            self._collect(trial_id, handle)
