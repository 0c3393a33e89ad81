"""Running an experiment's searcher: feed it validations and exits, carry out its
decisions. Searcher state and the trials it creates are written in the same transaction
as the events it consumed, so a master restart neither loses nor repeats a decision."""

from __future__ import annotations

import hashlib
import logging
import math
from datetime import timedelta

from sqlalchemy import insert, select, update
from sqlalchemy.orm import Session

from shipyard.common.config import ExperimentConfig, load_config
from shipyard.common.states import ExperimentState, TrialState
from shipyard.search import (
    Create,
    ExitReason,
    Searcher,
    SetTarget,
    Shutdown,
    Stop,
    TrialRequest,
    make_searcher,
)
from shipyard.search.options import SearcherOptions
from shipyard.server import orm
from shipyard.server.orm import utcnow
from shipyard.server.services import lifecycle, trial_kill
from shipyard.server.services.experiment_config import config_of
from shipyard.server.services.lifecycle import Event

log = logging.getLogger(__name__)


def trial_seed(experiment_seed: int, request_id: str) -> int:
    digest = hashlib.sha256(f"{experiment_seed}:{request_id}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


class SearcherCache:
    """Live searchers by experiment, so a pass does not rebuild one from its JSON state
    (cheap for ASHA, not for an Optuna study). An entry is trusted only while its sequence
    number equals the one saved in the database: a rolled-back pass leaves them unequal."""

    def __init__(self) -> None:
        self._live: dict[int, tuple[int, Searcher]] = {}

    def take(self, exp: orm.Experiment) -> Searcher:
        state = exp.searcher_state or {}
        cached = self._live.pop(exp.id, None)
        if cached is not None and cached[0] == state.get("seq"):
            return cached[1]
        searcher = make_searcher(config_of(exp).searcher, state["space"], exp.seed)
        searcher.set_state(state["state"])
        return searcher

    def keep(self, exp_id: int, seq: int, searcher: Searcher) -> None:
        self._live[exp_id] = (seq, searcher)

    def forget(self, exp_id: int) -> None:
        self._live.pop(exp_id, None)

    def experiment_ids(self) -> list[int]:
        return list(self._live)


def preview(config_yaml: str, config_file: str) -> dict:
    """The plan of a search (search/preview.py), from a config that is checked first."""
    from shipyard.search.preview import preview as preview_search  # rarely used: load late

    cfg = load_config(config_yaml, config_file)
    seed = cfg.reproducibility.experiment_seed or 0
    return preview_search(cfg.searcher, cfg.hyperparameter_space(), seed)


def start(exp: orm.Experiment, cfg: ExperimentConfig, *, session: Session) -> None:
    """Create the searcher of a new experiment and its first trials. Its space is kept as
    JSON with its state, to rebuild it after a restart from the experiment's typed config
    (config_of); the searcher section is kept there too, as earlier versions read it."""
    space = cfg.hyperparameter_space()
    searcher = make_searcher(cfg.searcher, space, exp.seed)
    exp.searcher_state = {"config": cfg.searcher_dict(), "space": space, "state": None, "seq": 0}
    requests = searcher.create_trials()
    for request in requests:
        _create_trial(session, exp, request)
    session.flush()
    _save(session, exp, searcher, {r.request_id for r in requests})


def consume_events(
    exp: orm.Experiment, *, session: Session, cache: SearcherCache, stop_grace_s: float
) -> tuple[list[int], Searcher]:
    """Process the experiment's pending events, and those their decisions add (a stop of a
    trial that is not running is its exit at once). The caller keeps the returned searcher
    in the cache once the transaction has committed."""
    searcher = cache.take(exp)
    signaled: list[int] = []  # trials told to stop or given a target: wake their long-polls
    touched: set[str] = set()
    while events := _pending_events(session, exp.id):
        for event in events:
            event.processed = True
            if ExperimentState(exp.state).terminal:
                continue
            request_id = event.payload["request_id"]
            touched.add(request_id)
            if event.kind == "validation":
                _warn_if_unusable(exp, request_id, event.payload["metrics"])
            try:
                if event.kind == "validation":
                    actions = searcher.on_validation(
                        request_id, event.payload["metrics"], event.payload["steps_completed"]
                    )
                else:
                    actions = searcher.on_trial_exit(
                        request_id, ExitReason(event.payload["reason"])
                    )
            except ValueError:
                log.exception("searcher refused event %s of experiment %s", event.id, exp.id)
                continue
            _apply(session, exp, actions, signaled, touched, stop_grace_s)
        session.flush()
    _save(session, exp, searcher, touched)
    return signaled, searcher


def _warn_if_unusable(exp: orm.Experiment, request_id: str, metrics: dict) -> None:
    """A searcher metric that is missing, NaN or inf counts as the worst value: say so in
    the master's log (the searcher's note on the trial says it in `experiment describe`)."""
    metric = config_of(exp).searcher.metric
    value = metrics.get(metric)
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        log.warning(
            "experiment %s trial %s: no finite %r in its validation (%r): counted as the "
            "worst value",
            exp.id,
            request_id,
            metric,
            value,
        )


def _pending_events(session: Session, experiment_id: int) -> list[orm.SearcherEvent]:
    return list(
        session.scalars(
            select(orm.SearcherEvent)
            .where(
                orm.SearcherEvent.experiment_id == experiment_id,
                orm.SearcherEvent.processed.is_(False),
            )
            .order_by(orm.SearcherEvent.id)
        )
    )


def _trial_by_request(session: Session, exp: orm.Experiment, request_id: str) -> orm.Trial | None:
    return session.scalar(
        select(orm.Trial).where(
            orm.Trial.experiment_id == exp.id, orm.Trial.request_id == request_id
        )
    )


def _apply(
    session: Session,
    exp: orm.Experiment,
    actions: list,
    signaled: list[int],
    touched: set[str],
    stop_grace_s: float,
) -> None:
    for action in actions:
        if isinstance(action, Create):
            _create_trial(session, exp, action.request)
            touched.add(action.request.request_id)
        elif isinstance(action, Stop | SetTarget):
            trial = _trial_by_request(session, exp, action.request_id)
            touched.add(action.request_id)
            if trial is None or TrialState(trial.state).terminal:
                continue
            if isinstance(action, SetTarget):
                trial.target_length = action.target
            else:
                stop_trial(session, trial, action.reason, stop_grace_s)
            signaled.append(trial.id)
        elif isinstance(action, Shutdown):
            exp.searcher_done = True
            if action.failure:
                exp.state = ExperimentState.ERRORED
                exp.ended_at = utcnow()


def stop_trial(session: Session, trial: orm.Trial, reason: str, grace_s: float) -> None:
    if trial_kill.was_killed(trial):
        return  # a user's kill stands: the trial ends CANCELED, as its exit reason says
    trial.stop_requested = True
    trial.exit_reason = reason
    if trial.state in lifecycle.HOLDING:
        # It hears the stop through its long-poll; past the deadline it is terminated.
        trial.stop_deadline = utcnow() + timedelta(seconds=grace_s)
        return
    # Not running (queued, paused, or waiting for a new target): it ends here and now.
    lifecycle.apply(session, trial, Event.STOPPED)


def _create_trial(session: Session, exp: orm.Experiment, request: TrialRequest) -> None:
    waiting = ExperimentState(exp.state) == ExperimentState.PAUSED
    parent = (
        _trial_by_request(session, exp, request.parent_request_id)
        if request.parent_request_id
        else None
    )
    trial = orm.Trial(
        experiment_id=exp.id,
        workspace_id=exp.workspace_id,
        request_id=request.request_id,
        hparams=request.hparams,
        seed=_seed_of(exp, request.request_id),
        target_length=request.target,
        # PBT's exploit: the new trial starts from its parent's latest checkpoint.
        parent_trial_id=parent.id if parent else None,
        latest_checkpoint=parent.latest_checkpoint if parent else None,
        steps_completed=_checkpoint_steps(session, parent.latest_checkpoint) if parent else 0,
    )
    lifecycle.apply(session, trial, Event.CREATED_PAUSED if waiting else Event.CREATED)
    session.add(trial)


def _seed_of(exp: orm.Experiment, request_id: str) -> int:
    """A trial's seed: derived from the experiment's, or the rerun trial's own."""
    return exp.trial_seed if exp.trial_seed is not None else trial_seed(exp.seed, request_id)


def _checkpoint_steps(session: Session, uuid: str | None) -> int:
    """Where a trial starting from this checkpoint starts (0: from scratch)."""
    if uuid is None:
        return 0
    ckpt = session.get(orm.Checkpoint, uuid)
    return ckpt.steps_completed if ckpt is not None else 0


def _save(session: Session, exp: orm.Experiment, searcher: Searcher, touched: set[str]) -> None:
    state = dict(exp.searcher_state or {})
    state["state"] = searcher.get_state()
    state["summary"] = searcher.summary()
    state["seq"] = int(state.get("seq", 0)) + 1
    exp.searcher_state = state
    exp.progress = searcher.progress()
    for request_id in touched:
        session.execute(
            update(orm.Trial)
            .where(orm.Trial.experiment_id == exp.id, orm.Trial.request_id == request_id)
            .values(searcher_info=searcher.trial_summary(request_id) or None)
        )


def saved_seq(exp: orm.Experiment) -> int:
    return int((exp.searcher_state or {}).get("seq", 0))


def park(trial: orm.Trial) -> bool:
    """A trial that reached its target asks to wait for the searcher's next one. True: it
    may exit and is launched again when a new target comes; False: it goes on (a new
    target came meanwhile, or it was stopped)."""
    if trial.stop_requested or trial.target_length is None or trial.searcher_time is None:
        return False  # nothing to wait for: no target, or no validation the searcher can use
    if target_ahead(trial):
        return False
    trial.waiting_for_searcher = True
    return True


def waiting_reason(trial: orm.Trial) -> str | None:
    """Why a trial waits for its searcher, in the words describe and job list show."""
    if not trial.waiting_for_searcher or target_ahead(trial):
        return None
    return f"waiting for the searcher at {trial.searcher_time or 0:g}"


def target_ahead(trial: orm.Trial) -> bool:
    """The searcher lets the trial train beyond where its latest validation put it."""
    return (
        trial.target_length is not None
        and trial.searcher_time is not None
        and trial.target_length > trial.searcher_time
    )


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


def record_validation(
    trial, options: SearcherOptions, metrics: dict, steps_completed: int, *, session: Session
) -> None:
    """Queue a validation for the searcher and note the trial's searcher time, in the
    transaction that stores the metrics (Core statements: this is the metrics hot path)."""
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
    time = options.time_of(metrics, steps_completed)
    if time is not None:
        session.execute(
            update(orm.Trial).where(orm.Trial.id == trial.id).values(searcher_time=time)
        )


# For `experiment continue` (services/experiment_continue.py), which reopens a search.
create_trial = _create_trial
save = _save
