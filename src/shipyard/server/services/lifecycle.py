"""The trial lifecycle: which event moves a trial from which state to which, and what else
that transition does. The only code that writes a trial's state and `ended_at`: callers say
what happened, `TRANSITIONS` decides. docs/architecture.md ("Trial lifecycle") shows this
table; tests/server/test_trial_lifecycle.py keeps the two equal."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from sqlalchemy.orm import Session

from shipyard.common.states import TrialState
from shipyard.search import ExitReason
from shipyard.server import orm
from shipyard.server.orm import utcnow


class Event(StrEnum):
    """What happened to a trial. Where the experiment's state decides the trial's (paused),
    the caller names it in the event: the caller knows it, the table stays a plain map."""

    CREATED = "created"  # the searcher asked for it
    CREATED_PAUSED = "created_paused"  # ... while its experiment is paused
    PAUSED = "paused"  # its experiment was paused
    ACTIVATED = "activated"  # its experiment was activated again
    KILLED = "killed"  # its experiment was killed
    TRIAL_KILLED = "trial_killed"  # a user killed this trial while it held no slot
    STOPPED = "stopped"  # the searcher (or its time limit) stopped it while it held no slot
    PLACED = "placed"  # the scheduler gave it slots: a new run begins
    LAUNCHED = "launched"  # the backend runs it
    REATTACHED = "reattached"  # found running after a master restart
    LOST = "lost"  # not found after a master restart: resumes from its checkpoint
    LOST_STOPPING = "lost_stopping"  # ... and the searcher had stopped it
    EXITED_KILLED = "exited_killed"  # its run ended and its experiment was killed
    EXITED_STOPPING = "exited_stopping"  # its run ended after a stop
    FINISHED = "finished"  # its run finished its work
    YIELDED = "yielded"  # its run gave up its slots: preempted, or waits for a target
    YIELDED_PAUSED = "yielded_paused"  # ... and its experiment is paused
    CRASHED = "crashed"  # its run failed and it has restarts left
    FAILED = "failed"  # its run failed for good: no restarts left, or it would fail again
    CONTINUED = "continued"  # its ended experiment was continued: it trains again


@dataclass(frozen=True)
class Transition:
    """A transition's next state and its effects. `ended_at` is set exactly when the next
    state is terminal."""

    to: TrialState
    opens_run: bool = False  # a new run id and row, its slots, per-run fields reset
    closes_run: bool = False  # slots and handle given back, the run's row closed
    counts_restart: bool = False
    clears_preemption: bool = False  # a preemption asked of the run is settled
    tells_searcher: ExitReason | None = None  # the searcher hears that the trial exited
    reopens: bool = False  # an ended trial trains again: its end and restarts are cleared

    def effects(self) -> list[str]:
        """The effects in the words of docs/architecture.md's table."""
        named = [
            ("opens a run", self.opens_run),
            ("closes the run", self.closes_run),
            ("counts a restart", self.counts_restart),
            ("clears the preemption", self.clears_preemption),
            (f"tells the searcher {self.tells_searcher}", self.tells_searcher is not None),
            ("sets ended_at", self.to.terminal),
            ("reopens the trial", self.reopens),
        ]
        return [words for words, applies in named if applies]


class ForbiddenTransition(RuntimeError):
    """An event that cannot happen to a trial in its state: a bug in the caller."""


_S = TrialState
HOLDING = (_S.STARTING, _S.RUNNING)  # a run is open: the trial holds slots
_WAITING = (_S.QUEUED, _S.PAUSED)
_ENDED = (_S.COMPLETED, _S.STOPPED, _S.ERRORED, _S.CANCELED)

# (state before, or None for a new trial) x event -> transition.
_ROWS: list[tuple[Sequence[TrialState | None], Event, Transition]] = [
    ((None,), Event.CREATED, Transition(_S.QUEUED)),
    ((None,), Event.CREATED_PAUSED, Transition(_S.PAUSED)),
    ((_S.QUEUED,), Event.PAUSED, Transition(_S.PAUSED)),
    ((_S.PAUSED,), Event.ACTIVATED, Transition(_S.QUEUED)),
    (_WAITING, Event.KILLED, Transition(_S.CANCELED)),
    # Its experiment goes on: the searcher hears of it as of a killed run (EXITED_KILLED).
    (_WAITING, Event.TRIAL_KILLED, Transition(_S.CANCELED, tells_searcher=ExitReason.CANCELED)),
    (_WAITING, Event.STOPPED, Transition(_S.STOPPED, tells_searcher=ExitReason.STOPPED)),
    ((_S.QUEUED,), Event.PLACED, Transition(_S.STARTING, opens_run=True)),
    ((_S.STARTING,), Event.LAUNCHED, Transition(_S.RUNNING)),
    (HOLDING, Event.REATTACHED, Transition(_S.RUNNING)),
    (HOLDING, Event.LOST, Transition(_S.QUEUED, closes_run=True)),
    (
        HOLDING,
        Event.LOST_STOPPING,
        Transition(_S.STOPPED, closes_run=True, tells_searcher=ExitReason.STOPPED),
    ),
    (
        HOLDING,
        Event.EXITED_KILLED,
        Transition(_S.CANCELED, closes_run=True, tells_searcher=ExitReason.CANCELED),
    ),
    (
        HOLDING,
        Event.EXITED_STOPPING,
        Transition(_S.STOPPED, closes_run=True, tells_searcher=ExitReason.STOPPED),
    ),
    (
        HOLDING,
        Event.FINISHED,
        Transition(
            _S.COMPLETED,
            closes_run=True,
            clears_preemption=True,
            tells_searcher=ExitReason.COMPLETED,
        ),
    ),
    (HOLDING, Event.YIELDED, Transition(_S.QUEUED, closes_run=True, clears_preemption=True)),
    (
        HOLDING,
        Event.YIELDED_PAUSED,
        Transition(_S.PAUSED, closes_run=True, clears_preemption=True),
    ),
    (HOLDING, Event.CRASHED, Transition(_S.QUEUED, closes_run=True, counts_restart=True)),
    (
        HOLDING,
        Event.FAILED,
        Transition(_S.ERRORED, closes_run=True, tells_searcher=ExitReason.ERRORED),
    ),
]

# Only `experiment continue` moves an ended trial (services/experiment_continue.py).
_ROWS.append((_ENDED, Event.CONTINUED, Transition(_S.QUEUED, reopens=True)))

TRANSITIONS: dict[tuple[TrialState | None, Event], Transition] = {
    (state, event): transition for states, event, transition in _ROWS for state in states
}


def states_allowing(event: Event) -> tuple[TrialState, ...]:
    """The states in which the event can happen (what a caller selects trials by)."""
    return tuple(s for s, e in TRANSITIONS if e == event and s is not None)


def apply(
    session: Session,
    trial: orm.Trial,
    event: Event,
    *,
    slots: list[str] | None = None,
    run_ended_how: str | None = None,
) -> Transition:
    """Move the trial as the table says and carry out the transition's effects. slots: the
    new run's (opens_run); run_ended_how: what the closed run's row records (closes_run)."""
    before = None if trial.state is None else TrialState(trial.state)
    transition = TRANSITIONS.get((before, event))
    if transition is None:
        raise ForbiddenTransition(f"trial {trial.id}: {event} cannot happen to a {before} trial")
    if transition.opens_run:
        if slots is None:
            raise ValueError(f"{event} opens a run: its slots are needed")
        _open_run(session, trial, slots)
    if transition.closes_run:
        if run_ended_how is None:
            raise ValueError(f"{event} closes the run: how it ended is needed")
        _close_run(session, trial, run_ended_how)
    if transition.counts_restart:
        trial.restarts += 1
    if transition.clears_preemption:
        trial.preempt_requested = False
        trial.preempt_deadline = None
    if transition.reopens:
        _reopen(trial)
    if transition.tells_searcher is not None:
        session.add(_exit_event(trial, transition.tells_searcher))
    trial.state = transition.to
    if transition.to.terminal:
        trial.ended_at = utcnow()
    return transition


def _reopen(trial: orm.Trial) -> None:
    """An ended trial goes on (from its latest checkpoint) with a fresh restart budget; its
    runs' rows keep what happened before."""
    trial.ended_at = None
    trial.restarts = 0
    trial.stop_requested = False
    trial.stop_deadline = None
    trial.exit_reason = None
    trial.waiting_for_searcher = False


def _open_run(session: Session, trial: orm.Trial, slots: list[str]) -> None:
    trial.slots = slots
    trial.run_id += 1
    trial.log_offset = 0
    trial.log_lines = 0
    trial.preempt_requested = False
    trial.preempt_deadline = None
    trial.waiting_for_searcher = False
    trial.run_error = None
    trial.last_heartbeat = utcnow()
    trial.started_at = trial.started_at or utcnow()
    session.add(orm.TrialRun(trial_id=trial.id, run_id=trial.run_id, slots=trial.slots))


def _close_run(session: Session, trial: orm.Trial, how: str) -> None:
    """Give back the run's slots and record how it ended (runs launched before migration
    0003 have no row)."""
    trial.handle = None
    trial.slots = []
    run = session.get(orm.TrialRun, (trial.id, trial.run_id))
    if run is not None:
        run.ended_at = utcnow()
        run.ended_how = how


def _exit_event(trial: orm.Trial, reason: ExitReason) -> orm.SearcherEvent:
    return orm.SearcherEvent(
        experiment_id=trial.experiment_id,
        trial_id=trial.id,
        kind="exit",
        payload={"request_id": trial.request_id, "reason": reason.value},
    )
