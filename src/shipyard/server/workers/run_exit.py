"""What a run's exit means for its trial: the lifecycle event that happened, and the words
users read about it (the trial's exit reason, how its run ended). Pure: the supervisor
applies the verdict in its write transaction."""

from __future__ import annotations

from dataclasses import dataclass

from shipyard.backends.base import RunState, RunStatus
from shipyard.common.states import ExperimentState
from shipyard.search.registry import full_length
from shipyard.server import orm
from shipyard.server.services import limits
from shipyard.server.services.experiment_config import config_of
from shipyard.server.services.lifecycle import Event
from shipyard.server.services.trial_kill import was_killed


@dataclass(frozen=True)
class Verdict:
    event: Event
    exit_reason: str | None  # the trial's exit reason from now on
    run_ended_how: str  # what the run's row records


def describe(state: RunState) -> str:
    """The exit in a user's words, when nothing better is known."""
    if state.status == RunStatus.LOST:
        return state.reason or "the trial's process was lost (no exit code)"
    if state.status == RunStatus.PREEMPTED:
        return state.reason or "preempted by its engine"
    code = state.exit_code
    if code is not None and code < 0:
        ended = f"killed by signal {-code}"
    else:
        ended = f"exited with code {code}"
    # A backend may say more: why a Pod could not start.
    return f"{ended}; {state.reason}" if state.reason else ended


def judge(
    trial: orm.Trial,
    exp: orm.Experiment,
    state: RunState,
    reason: str,
    *,
    can_restart: bool,
) -> Verdict:
    """reason: why the run ended (describe(state), or the launch's failure)."""
    max_restarts = config_of(exp).max_restarts
    if trial.run_error:
        reason = f"{reason}: {trial.run_error}"  # what the trial said went wrong
    clean_exit = state.status == RunStatus.EXITED and state.exit_code == 0
    engine_preempted = state.status == RunStatus.PREEMPTED
    exp_state = ExperimentState(exp.state)

    def verdict(event: Event, outcome: str, exit_reason: str | None) -> Verdict:
        return Verdict(event, exit_reason, f"{reason}; {outcome}")

    if exp_state == ExperimentState.CANCELED:
        killed = "the experiment was killed"
        return verdict(Event.EXITED_KILLED, f"canceled: {killed}", killed)
    if trial.stop_requested and was_killed(trial):
        # A user killed this trial (`shipyard trial kill`): its experiment goes on.
        return verdict(Event.EXITED_KILLED, "canceled: the trial was killed", trial.exit_reason)
    if trial.stop_requested:
        # The searcher stopped it: after its final checkpoint, or terminated when the
        # grace period ran out, it ends as the searcher's decision.
        stopped = trial.exit_reason if clean_exit else f"{trial.exit_reason}; then {reason}"
        outcome = (
            stopped
            if stopped and stopped.startswith(limits.TIME_LIMIT)
            else "stopped by the searcher"
        )
        return verdict(Event.EXITED_STOPPING, outcome, stopped)
    if (
        clean_exit
        and not trial.waiting_for_searcher
        and (not trial.preempt_requested or _reached_max_length(trial, exp))
    ):
        # A trial that finished its work ends, even if a pause came meanwhile.
        return verdict(Event.FINISHED, "completed", None)
    if trial.preempt_requested or engine_preempted or (clean_exit and trial.waiting_for_searcher):
        # Preempted, by Shipyard or by the engine (it resumes from its checkpoint), or it
        # reached its searcher target and waits for the next one: either way it holds no slot.
        if engine_preempted:
            outcome = "resumes from its checkpoint"  # after the engine's reason
        elif trial.waiting_for_searcher:
            outcome = "waits for the searcher's next target"
        else:
            outcome = "preempted: resumes from its checkpoint"
        paused = exp_state == ExperimentState.PAUSED
        event = Event.YIELDED_PAUSED if paused else Event.YIELDED
        return verdict(event, outcome, trial.exit_reason)
    if can_restart and trial.restarts < max_restarts:
        outcome = f"restart {trial.restarts + 1} of {max_restarts}"  # the one it counts
        return verdict(Event.CRASHED, outcome, f"{reason}; {outcome}")
    outcome = (
        f"no restarts left (max_restarts: {max_restarts})"
        if can_restart
        else "not restarted: it would fail the same way"
    )
    return verdict(Event.FAILED, outcome, f"{reason}; {outcome}")


def _reached_max_length(trial: orm.Trial, exp: orm.Experiment) -> bool:
    """It trained as far as its search lets any trial (in the searcher's time unit)."""
    searcher = config_of(exp).searcher
    length = full_length(searcher)
    if length is None:
        return False
    if trial.searcher_time is not None:
        return trial.searcher_time >= length
    # No validation yet: steps_completed is the searcher's time only without a time_metric
    # (with one, e.g. epochs, it counts batches: nothing says how far the trial got).
    return searcher.time_metric is None and trial.steps_completed >= length
