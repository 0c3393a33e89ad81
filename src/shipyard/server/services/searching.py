"""Running an experiment's searcher: feed it validations and exits, carry out its
decisions. Searcher state and the trials it creates are written in the same transaction
as the events it consumed, so a master restart neither loses nor repeats a decision."""

from __future__ import annotations

import hashlib
import logging

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from shipyard.common.states import ExperimentState, TrialState
from shipyard.search import Create, ExitReason, Shutdown, Stop, make_searcher
from shipyard.server import orm
from shipyard.server.orm import utcnow

log = logging.getLogger(__name__)


def trial_seed(experiment_seed: int, request_id: str) -> int:
    digest = hashlib.sha256(f"{experiment_seed}:{request_id}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def start(exp: orm.Experiment, searcher_config: dict, space: dict, *, session: Session) -> None:
    """Create the searcher of a new experiment and its first trials."""
    searcher = make_searcher(searcher_config, space, exp.seed)
    exp.searcher_state = {"config": searcher_config, "space": space, "state": None}
    for request in searcher.create_trials():
        _create_trial(session, exp, request)
    _save(exp, searcher)


def consume_events(exp: orm.Experiment, *, session: Session) -> list[int]:
    """Process the experiment's pending events; returns trials whose stop flag was set."""
    events = list(
        session.scalars(
            select(orm.SearcherEvent)
            .where(
                orm.SearcherEvent.experiment_id == exp.id,
                orm.SearcherEvent.processed.is_(False),
            )
            .order_by(orm.SearcherEvent.id)
        )
    )
    state = exp.searcher_state or {}
    searcher = make_searcher(state["config"], state["space"], exp.seed)
    searcher.set_state(state["state"])
    stopped: list[int] = []
    for event in events:
        event.processed = True
        if ExperimentState(exp.state).terminal:
            continue
        request_id = event.payload["request_id"]
        try:
            if event.kind == "validation":
                actions = searcher.on_validation(request_id, event.payload["metrics"])
            else:
                actions = searcher.on_trial_exit(request_id, ExitReason(event.payload["reason"]))
        except ValueError:
            log.exception("searcher refused event %s of experiment %s", event.id, exp.id)
            continue
        stopped += _apply(session, exp, actions)
    _save(exp, searcher)
    return stopped


def _apply(session: Session, exp: orm.Experiment, actions: list) -> list[int]:
    stopped = []
    for action in actions:
        if isinstance(action, Create):
            _create_trial(session, exp, action.request)
        elif isinstance(action, Stop):
            trial = session.scalar(
                select(orm.Trial).where(
                    orm.Trial.experiment_id == exp.id, orm.Trial.request_id == action.request_id
                )
            )
            if trial is not None and not TrialState(trial.state).terminal:
                trial.stop_requested = True
                stopped.append(trial.id)
        elif isinstance(action, Shutdown):
            exp.searcher_done = True
            if action.failure:
                exp.state = ExperimentState.ERRORED
                exp.ended_at = utcnow()
    return stopped


def _create_trial(session: Session, exp: orm.Experiment, request) -> None:
    waiting = ExperimentState(exp.state) == ExperimentState.PAUSED
    session.add(
        orm.Trial(
            experiment_id=exp.id,
            workspace_id=exp.workspace_id,
            request_id=request.request_id,
            hparams=request.hparams,
            seed=trial_seed(exp.seed, request.request_id),
            state=TrialState.PAUSED if waiting else TrialState.QUEUED,
        )
    )


def _save(exp: orm.Experiment, searcher) -> None:
    state = dict(exp.searcher_state or {})
    state["state"] = searcher.get_state()
    exp.searcher_state = state
    exp.progress = searcher.progress()


def finish_if_done(exp: orm.Experiment, *, session: Session) -> bool:
    """An ACTIVE experiment whose searcher shut down and whose trials all ended is over."""
    if ExperimentState(exp.state) != ExperimentState.ACTIVE or not exp.searcher_done:
        return False
    states = [
        TrialState(v)
        for v in session.scalars(select(orm.Trial.state).where(orm.Trial.experiment_id == exp.id))
    ]
    if any(not st.terminal for st in states):
        return False
    succeeded = any(st in (TrialState.COMPLETED, TrialState.STOPPED) for st in states)
    exp.state = ExperimentState.COMPLETED if succeeded else ExperimentState.ERRORED
    exp.progress = 1.0
    exp.ended_at = utcnow()
    return True


def exit_event(trial: orm.Trial, reason: ExitReason) -> orm.SearcherEvent:
    return orm.SearcherEvent(
        experiment_id=trial.experiment_id,
        trial_id=trial.id,
        kind="exit",
        payload={"request_id": trial.request_id, "reason": reason.value},
    )


def record_validation(trial, metrics: dict, steps_completed: int, *, session: Session) -> None:
    """Queue a validation for the searcher (Core insert: this is on the metrics hot path)."""
    session.execute(
        insert(orm.SearcherEvent).values(
            experiment_id=trial.experiment_id,
            trial_id=trial.id,
            kind="validation",
            processed=False,
            payload={
                "request_id": trial.request_id,
                "metrics": metrics,
                "steps_completed": steps_completed,
            },
        )
    )
