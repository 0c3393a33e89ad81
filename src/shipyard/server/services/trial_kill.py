"""A user kills one trial (`shipyard trial kill`, POST /trials/{id}/kill): as in Determined, it
ends CANCELED and its experiment goes on with its other trials (the searcher hears that the
trial exited CANCELED, as it does of a run its experiment's kill ended).

A trial that holds no slot (queued, paused) ends here and now. A running one is marked: its
exit reason says who killed it, `stop_requested` tells its code to stop (the long-poll) and a
stop deadline of now makes the supervisor terminate it at its next pass; its exit is then
judged EXITED_KILLED (workers/run_exit.py), whatever its exit code, and never restarted.
Its checkpoints stay, as the retention policy of its experiment keeps them."""

from __future__ import annotations

from sqlalchemy.orm import Session

from shipyard.common.errors import Conflict
from shipyard.common.states import TrialState
from shipyard.server import orm
from shipyard.server.orm import utcnow
from shipyard.server.services import lifecycle, trials
from shipyard.server.services.lifecycle import Event

KILLED_BY = "killed by "  # the start of a killed trial's exit reason: "killed by alice"


def was_killed(trial: orm.Trial) -> bool:
    """Whether a user killed the trial (its exit reason says so)."""
    return bool(trial.exit_reason and trial.exit_reason.startswith(KILLED_BY))


def kill(trial_id: int, *, username: str, session: Session) -> orm.Trial:
    """Kill the trial; killing a trial that a kill already ended is a no-op."""
    trial = trials.get(trial_id, session=session)
    state = TrialState(trial.state)
    if state == TrialState.CANCELED:
        return trial
    if state.terminal:
        raise Conflict(f"trial {trial_id} has already ended ({state}): there is nothing to kill")
    if not was_killed(trial):
        trial.exit_reason = f"{KILLED_BY}{username or 'a user'}"
    if state in lifecycle.HOLDING:
        trial.stop_requested = True
        trial.stop_deadline = utcnow()  # passed: the supervisor terminates it at its next pass
    else:
        lifecycle.apply(session, trial, Event.TRIAL_KILLED)
    return trial
