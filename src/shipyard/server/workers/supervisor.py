"""Trial supervisor: launches scheduled trials, notices exits, restarts or ends trials,
carries pause/kill to running trials, and collects their output."""

from __future__ import annotations

import logging
import time
from datetime import timedelta

from sqlalchemy import select

from shipyard.backends.base import Handle, LogSource, RunState, RunStatus, Slot
from shipyard.backends.pooled import PooledBackend
from shipyard.common.errors import ConfigError
from shipyard.common.states import ExperimentState, TrialState
from shipyard.search import ExitReason
from shipyard.search.registry import full_length
from shipyard.server import orm
from shipyard.server.db import Database
from shipyard.server.orm import utcnow
from shipyard.server.pools import Pool
from shipyard.server.services import jobs, limits, logs, searching
from shipyard.server.services.signals import SignalHub
from shipyard.server.settings import Settings
from shipyard.server.workers import scheduler
from shipyard.server.workers.launcher import build_spec, run_log_path

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


def _experiment_paused(session, trial_id: int) -> bool:
    exp = session.get(orm.Experiment, session.get(orm.Trial, trial_id).experiment_id)
    return ExperimentState(exp.state) == ExperimentState.PAUSED


def _describe_exit(state: RunState) -> str:
    if state.status == RunStatus.LOST:
        return state.reason or "the trial's process was lost (no exit code)"
    if state.status == RunStatus.PREEMPTED:
        return state.reason or "preempted by its engine"
    code = state.exit_code
    if code is not None and code < 0:
        return f"killed by signal {-code}"
    return f"exited with code {code}"


class Supervisor:
    def __init__(
        self,
        settings: Settings,
        db: Database,
        backend: PooledBackend,
        hub: SignalHub,
        pools: dict[str, Pool],
    ) -> None:
        self.settings = settings
        self.db = db
        self.backend = backend
        self.hub = hub
        self.pools = pools
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
                handle = self._find(trial)
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
                trial.last_heartbeat = utcnow()  # the time the master was down is not its fault
                self.handles[trial.id] = handle
                self.offsets[trial.id] = trial.log_offset

    def _find(self, trial: orm.Trial) -> Handle | None:
        if trial.handle:
            return self.backend.recover(trial.handle)
        # Launched, but the master died before it recorded the handle: the process may run.
        handle = self.backend.find_launch(run_log_path(self.settings, trial))
        if handle is not None:
            trial.handle = handle.data
            log.info("trial %s: found run %s launched before the restart", trial.id, trial.run_id)
        return handle

    # -- launching ------------------------------------------------------------------------

    def schedule(self) -> int:
        with self.db.read() as s:
            has_queued = s.scalar(select(orm.Trial.id).where(jobs.LAUNCHABLE).limit(1))
        if has_queued is None:
            return 0
        launches = []
        preempted: list[int] = []
        with self.db.write() as s:
            holding = jobs.holding_with_experiments(s)
            busy = {slot for t, _ in holding for slot in t.slots or []}
            used = jobs.slots_in_use([t for t, _ in holding])
            rows = s.execute(
                select(orm.Trial, orm.Experiment)
                .join(orm.Experiment, orm.Experiment.id == orm.Trial.experiment_id)
                .where(jobs.LAUNCHABLE, orm.Experiment.state == ExperimentState.ACTIVE)
            ).all()
            for pool in self.pools.values():
                pool_rows = [(t, e) for t, e in rows if e.resource_pool == pool.name]
                if not pool_rows or self.backend.health_of(pool.name):
                    continue  # nothing waits, or its engine cannot run trials now
                requests = [jobs.request_for(t, e, pool) for t, e in pool_rows]
                free = [slot for slot in pool.slots if slot.id not in busy]
                placed = scheduler.assign(requests, free, used, reserve=pool.preemption)
                for trial, exp in pool_rows:
                    if trial.id in placed:
                        self._start_run(s, trial, placed[trial.id])
                        used[exp.id] = used.get(exp.id, 0) + len(placed[trial.id])
                        launches.append((trial, exp, placed[trial.id]))
                if pool.preemption:
                    waiting = [r for r in requests if r.trial_id not in placed]
                    running = [
                        *jobs.running_in(pool, holding),
                        *(jobs.running(t, e) for t, e in pool_rows if t.id in placed),
                    ]
                    free_now = len(free) - sum(len(v) for v in placed.values())
                    victims = scheduler.preemptions(waiting, running, free_now, used)
                    self._preempt(s, victims, why="a job of better priority needs its slots")
                    preempted += victims
        for trial_id in preempted:
            self.hub.bump(trial_id)  # its long-poll answers now: should_preempt() turns true
        for trial, exp, slots in launches:
            handle = self._launch(trial, exp, slots)
            if handle is None:
                continue
            # Recorded at once: a master that dies now finds this process on restart
            # instead of launching the run a second time.
            with self.db.write() as s:
                row = s.get(orm.Trial, trial.id)
                row.handle = handle.data
                run = s.get(orm.TrialRun, (trial.id, row.run_id))
                if run is not None:
                    run.environment = {
                        "backend": handle.backend,
                        "pool": exp.resource_pool,
                        **handle.data.get(Handle.ENVIRONMENT, {}),
                    }
                if row.state == TrialState.STARTING:
                    row.state = TrialState.RUNNING
        return len(launches)

    @staticmethod
    def _start_run(s, trial: orm.Trial, slots: list[Slot]) -> None:
        trial.state = TrialState.STARTING
        trial.slots = [slot.id for slot in slots]
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

    def _preempt(self, s, trial_ids: list[int], why: str) -> None:
        """Ask trials to give up their slots: checkpoint and exit, or be killed after
        their experiment's preemption_timeout."""
        now = utcnow()
        for trial_id in trial_ids:
            trial = s.get(orm.Trial, trial_id)
            exp = s.get(orm.Experiment, trial.experiment_id)
            trial.preempt_requested = True
            trial.preempt_deadline = now + timedelta(seconds=self._preemption_timeout(exp))
            log.info("preempting trial %s: %s", trial_id, why)

    def _preemption_timeout(self, exp: orm.Experiment) -> float:
        timeout = exp.config.get("preemption_timeout")
        return self.settings.preempt_timeout_s if timeout is None else float(timeout)

    def _launch(self, trial: orm.Trial, exp: orm.Experiment, slots: list[Slot]) -> Handle | None:
        try:
            handle = self.backend.launch(build_spec(self.settings, exp, trial, slots))
        except Exception as exc:  # noqa: BLE001 - any launch failure is the trial's failure
            # The trial's own settings (ConfigError) need no traceback, and would fail the
            # same way on every restart.
            settings_error = isinstance(exc, ConfigError)
            if settings_error:
                log.warning("launching trial %s failed: %s", trial.id, exc)
            else:
                log.exception("launching trial %s failed", trial.id)
            self._on_exit(
                trial.id,
                RunState(RunStatus.LOST),
                reason=f"launch failed: {exc}",
                can_restart=not settings_error,
            )
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

    def _on_exit(
        self,
        trial_id: int,
        state: RunState,
        reason: str | None = None,
        *,
        can_restart: bool = True,
    ) -> None:
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
            engine_preempted = state.status == RunStatus.PREEMPTED
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
                outcome = (
                    trial.exit_reason
                    if (trial.exit_reason or "").startswith(limits.TIME_LIMIT)
                    else "stopped by the searcher"
                )
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
            elif (
                trial.preempt_requested
                or engine_preempted
                or (clean_exit and trial.waiting_for_searcher)
            ):
                # Preempted, by Shipyard or by the engine (it resumes from its checkpoint), or
                # it reached its searcher target and waits for the next one: either way it
                # holds no slot.
                if engine_preempted:
                    outcome = "resumes from its checkpoint"  # after the engine's reason
                elif trial.waiting_for_searcher:
                    outcome = "waits for the searcher's next target"
                else:
                    outcome = "preempted: resumes from its checkpoint"
                trial.preempt_requested = False
                trial.preempt_deadline = None
                paused = ExperimentState(exp.state) == ExperimentState.PAUSED
                trial.state = TrialState.PAUSED if paused else TrialState.QUEUED
            elif can_restart and trial.restarts < max_restarts:
                trial.restarts += 1
                trial.state = TrialState.QUEUED
                outcome = f"restart {trial.restarts} of {max_restarts}"
                trial.exit_reason = f"{reason}; {outcome}"
            else:
                trial.state = TrialState.ERRORED
                outcome = (
                    f"no restarts left (max_restarts: {max_restarts})"
                    if can_restart
                    else "not restarted: it would fail the same way"
                )
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
        """Carry pause, kill, preemption and stop deadlines and the trials' limits
        (heartbeat, time limit) to the running processes."""
        if not self.handles:
            return
        now = utcnow()
        to_kill: list[int] = []
        needs_flag: list[int] = []
        hung: dict[int, str] = {}
        over_time: dict[int, str] = {}
        with self.db.read() as s:
            rows = s.execute(
                select(orm.Trial, orm.Experiment)
                .join(orm.Experiment, orm.Experiment.id == orm.Trial.experiment_id)
                .where(orm.Trial.id.in_(list(self.handles)))
            ).all()
            timed = [t.id for t, e in rows if e.config.get("trial_time_limit") is not None]
            ran = limits.running_seconds(timed, now, session=s)
        for trial, exp in rows:
            if trial.id in self.terminating:
                continue  # already being killed
            state = ExperimentState(exp.state)
            if state == ExperimentState.CANCELED:
                to_kill.append(trial.id)
            elif trial.stop_deadline is not None and trial.stop_deadline < now:
                to_kill.append(trial.id)  # asked to stop, and it did not exit in time
            elif trial.preempt_deadline is not None and trial.preempt_deadline < now:
                to_kill.append(trial.id)  # it did not stop in time: it resumes from its checkpoint
            elif why := limits.hung(trial, exp, now):
                hung[trial.id] = why
            elif trial.id in ran and (why := limits.over_time(trial, exp, ran[trial.id])):
                over_time[trial.id] = why
            elif state == ExperimentState.PAUSED and not trial.preempt_requested:
                needs_flag.append(trial.id)
        to_wake = list(over_time)
        if needs_flag or hung or over_time:
            with self.db.write() as s:
                still_paused = [t for t in needs_flag if _experiment_paused(s, t)]
                self._preempt(s, still_paused, why="its experiment was paused")
                to_wake += still_paused
                for trial_id, why in hung.items():
                    s.get(orm.Trial, trial_id).run_error = why  # joins its exit reason
                    log.warning("trial %s is hung: %s; killing it", trial_id, why)
                for trial_id, why in over_time.items():
                    # Stopped as a searcher stop is: it checkpoints and exits, or is
                    # terminated after the stop grace period.
                    searching.stop_trial(
                        s, s.get(orm.Trial, trial_id), why, self.settings.stop_grace_s
                    )
        to_kill += list(hung)
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
