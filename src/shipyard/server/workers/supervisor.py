"""Trial supervisor: the runs of trials. Launches the runs the scheduler places, notices
their exits, carries pause, kill, preemption and limits to running processes, and collects
their output. What an exit means is judged in run_exit.py; the state it moves the trial to
is services/lifecycle.py's."""

from __future__ import annotations

import logging
import time
from datetime import timedelta

from sqlalchemy import select

from shipyard.backends.base import Handle, LogSource, RunState, RunStatus, Slot
from shipyard.backends.pooled import PooledBackend
from shipyard.common.errors import ConfigError
from shipyard.common.states import ExperimentState, TrialState
from shipyard.server import orm
from shipyard.server.auth.tokens import TaskTokens
from shipyard.server.db import Database
from shipyard.server.orm import utcnow
from shipyard.server.pools import Pool
from shipyard.server.services import (
    jobs,
    lifecycle,
    limits,
    logs,
    scheduler,
    searching,
    trial_kill,
)
from shipyard.server.services.experiment_config import config_of
from shipyard.server.services.lifecycle import Event
from shipyard.server.services.signals import SignalHub
from shipyard.server.settings import Settings
from shipyard.server.workers import run_exit
from shipyard.server.workers.launcher import build_spec, run_log_path
from shipyard.server.workers.run_secrets import RunSecrets

log = logging.getLogger(__name__)


def _experiment_paused(session, trial_id: int) -> bool:
    exp = session.get_one(orm.Experiment, session.get_one(orm.Trial, trial_id).experiment_id)
    return ExperimentState(exp.state) == ExperimentState.PAUSED


class Supervisor:
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
        self.pools = pools
        self.task_tokens = task_tokens
        self.handles: dict[int, Handle] = {}
        self.offsets: dict[int, int] = {}
        self.terminating: set[int] = set()
        self.ended: list[tuple[int, int]] = []  # (experiment, trial) awaiting retention
        self._last_logs = 0.0
        self.run_secrets = RunSecrets(settings, db)

    # -- after a master restart ------------------------------------------------------

    def recover(self) -> None:
        """Re-attach to every trial the database says is running, before scheduling."""
        with self.db.write() as s:
            for trial in s.scalars(select(orm.Trial).where(orm.Trial.state.in_(lifecycle.HOLDING))):
                handle = self._find(trial)
                if handle is None and trial_kill.was_killed(trial):
                    # A user had killed it: lost now, it ends as killed (CANCELED).
                    how = f"lost while the master was down; {trial.exit_reason}"
                    lifecycle.apply(s, trial, Event.EXITED_KILLED, run_ended_how=how)
                    continue
                if handle is None and trial.stop_requested:
                    # The searcher had stopped it: lost now, it ends as stopped.
                    how = "lost while the master was down; stopped by the searcher"
                    lifecycle.apply(s, trial, Event.LOST_STOPPING, run_ended_how=how)
                    continue
                if handle is None:
                    log.warning("trial %s was not found after the restart; requeued", trial.id)
                    trial.exit_reason = (
                        "lost while the master was down; resumed from its checkpoint"
                    )
                    lifecycle.apply(s, trial, Event.LOST, run_ended_how=trial.exit_reason)
                    continue
                lifecycle.apply(s, trial, Event.REATTACHED)
                trial.last_heartbeat = utcnow()  # the time the master was down is not its fault
                self.handles[trial.id] = handle
                self.offsets[trial.id] = trial.log_offset
                self.run_secrets.reattach(trial, session=s)
        self.run_secrets.sweep(self.handles)  # the secret files of runs that ended meanwhile

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
            quotas = jobs.quotas(holding, s)
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
                placed = scheduler.assign(
                    requests, free, used, reserve=pool.preemption, quotas=quotas
                )
                for trial, exp in pool_rows:
                    if trial.id in placed:
                        slot_ids = [slot.id for slot in placed[trial.id]]
                        lifecycle.apply(s, trial, Event.PLACED, slots=slot_ids)
                        used[exp.id] = used.get(exp.id, 0) + len(placed[trial.id])
                        launches.append((trial, exp, placed[trial.id]))
                if pool.preemption:
                    waiting = [r for r in requests if r.trial_id not in placed]
                    running = [
                        *jobs.running_in(pool, holding),
                        *(jobs.running(t, e) for t, e in pool_rows if t.id in placed),
                    ]
                    free_now = len(free) - sum(len(v) for v in placed.values())
                    victims = scheduler.preemptions(waiting, running, free_now, used, quotas)
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
                row = s.get_one(orm.Trial, trial.id)
                row.handle = handle.data
                run = s.get(orm.TrialRun, (trial.id, row.run_id))
                if run is not None:
                    run.environment = {
                        "backend": handle.backend,
                        "pool": exp.resource_pool,
                        **handle.data.get(Handle.ENVIRONMENT, {}),
                    }
                if row.state == TrialState.STARTING:
                    lifecycle.apply(s, row, Event.LAUNCHED)
        return len(launches)

    def _preempt(self, s, trial_ids: list[int], why: str) -> None:
        """Ask trials to give up their slots: checkpoint and exit, or be killed after
        their experiment's preemption_timeout."""
        now = utcnow()
        for trial_id in trial_ids:
            trial = s.get_one(orm.Trial, trial_id)
            exp = s.get_one(orm.Experiment, trial.experiment_id)
            trial.preempt_requested = True
            trial.preempt_deadline = now + timedelta(seconds=self._preemption_timeout(exp))
            log.info("preempting trial %s: %s", trial_id, why)

    def _preemption_timeout(self, exp: orm.Experiment) -> float:
        timeout = config_of(exp).preemption_timeout
        return self.settings.preempt_timeout_s if timeout is None else float(timeout)

    def _launch(self, trial: orm.Trial, exp: orm.Experiment, slots: list[Slot]) -> Handle | None:
        try:
            token = self.task_tokens.mint(trial.id, trial.run_id) if self.task_tokens else None
            shares = self.backend.shares_masters_files(slots)
            secrets = self.run_secrets.prepare(trial, exp, shares)  # checked at every run
            spec = build_spec(self.settings, exp, trial, slots, token, secrets, shares)
            handle = self.backend.launch(spec)
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
        reason = reason or run_exit.describe(state)
        self.terminating.discard(trial_id)
        try:
            with self.db.write() as s:
                trial = s.get_one(orm.Trial, trial_id)
                exp = s.get_one(orm.Experiment, trial.experiment_id)
                if state.last_output and not logs.received_any(trial, session=s):
                    # Its entry failed before it could send a line (an image without Shipyard):
                    # what it printed, masked as its log is.
                    [last] = self.run_secrets.mask_lines(trial_id, [state.last_output])
                    reason = f"{reason}; its last output:\n{last}"
                verdict = run_exit.judge(trial, exp, state, reason, can_restart=can_restart)
                trial.exit_reason = verdict.exit_reason
                lifecycle.apply(s, trial, verdict.event, run_ended_how=verdict.run_ended_how)
                ended = TrialState(trial.state).terminal
                exp_id = exp.id
        finally:
            self.run_secrets.finish(trial_id)  # after the reason is masked
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
            timed = [t.id for t, e in rows if config_of(e).trial_time_limit is not None]
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
                    s.get_one(orm.Trial, trial_id).run_error = why  # joins its exit reason
                    log.warning("trial %s is hung: %s; killing it", trial_id, why)
                for trial_id, why in over_time.items():
                    # Stopped as a searcher stop is: it checkpoints and exits, or is
                    # terminated after the stop grace period.
                    searching.stop_trial(
                        s, s.get_one(orm.Trial, trial_id), why, self.settings.stop_grace_s
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
            chunk = self.run_secrets.mask(trial_id, chunk)  # the run's wrapper masked it too
            with self.db.write() as s:
                logs.append(s.get_one(orm.Trial, trial_id), chunk, new_offset, session=s)
            self.offsets[trial_id] = new_offset
            if not final:
                return

    def shutdown(self) -> None:
        """Flush output of running trials; they keep running and are re-attached later."""
        for trial_id, handle in list(self.handles.items()):
            self._collect(trial_id, handle)
