"""ORM rows -> API bodies (common/api.py)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from sqlalchemy import Connection, select
from sqlalchemy.orm import Session

from shipyard.common import api
from shipyard.common.states import TrialState
from shipyard.server import orm
from shipyard.server.services import (
    checkpoint_storage,
    experiment_totals,
    limits,
    metrics,
    searching,
)
from shipyard.server.services.experiment_config import config_of


def _pick_best(values: list[float | None], smaller_is_better: bool) -> float | None:
    present = [v for v in values if v is not None]
    if not present:
        return None
    return min(present) if smaller_is_better else max(present)


def trial_summaries(
    exp: orm.Experiment, trials: list[orm.Trial], *, session: Session, detail: bool = False
) -> list[api.TrialSummary] | list[api.TrialDetail]:
    searcher = config_of(exp).searcher
    metric = searcher.metric
    smaller = searcher.smaller_is_better
    sums = metrics.summaries([t.id for t in trials], smaller_is_better=smaller, session=session)
    out = []
    for t in trials:
        own = sums.get(t.id, [])
        searcher_sum = next((m for m in own if m.name == metric and m.group == "validation"), None)
        best, last = (searcher_sum.best, searcher_sum.last) if searcher_sum else (None, None)
        fields = _trial_fields(t, metric, best, last)
        out.append(
            api.TrialDetail(
                **fields,
                workspace=_workspace_name(t.workspace_id, session),
                seed=t.seed,
                exit_reason=t.exit_reason,
                metrics=own,
                runs=_runs(t.id, session),
            )
            if detail
            else api.TrialSummary(**fields)
        )
    return out


def _trial_fields(t: Any, metric: str | None, best: float | None, last: float | None) -> dict:
    """A TrialSummary's fields from `t`, an orm.Trial or a row of its columns, and its
    searcher metric's best and latest values."""
    return dict(
        id=t.id,
        experiment_id=t.experiment_id,
        request_id=t.request_id,
        state=t.state,
        hparams=t.hparams,
        restarts=t.restarts,
        run_id=t.run_id,
        steps_completed=t.steps_completed,
        searcher_metric=metric,
        best_validation=best,
        latest_validation=last,
        latest_checkpoint=t.latest_checkpoint,
        slots=list(t.slots or []),
        started_at=t.started_at,
        ended_at=t.ended_at,
        rung=_rung(t.searcher_info),
        searcher_info=t.searcher_info or {},
        target_length=t.target_length,
        parent_trial_id=t.parent_trial_id,
        end_reason=end_reason(t),
    )


def _runs(trial_id: int, session: Session) -> list[api.RunInfo]:
    rows = session.scalars(
        select(orm.TrialRun).where(orm.TrialRun.trial_id == trial_id).order_by(orm.TrialRun.run_id)
    )
    return [
        api.RunInfo(
            run_id=r.run_id,
            slots=list(r.slots or []),
            started_at=r.started_at,
            ended_at=r.ended_at,
            ended_how=r.ended_how,
            environment=r.environment,
        )
        for r in rows
    ]


def _rung(info: dict | None) -> int | None:
    value = (info or {}).get("rung", (info or {}).get("round"))
    return value if isinstance(value, int) else None


def end_reason(trial: Any) -> str | None:
    """Why a trial ended, in the words `experiment describe` shows (`trial`: an orm.Trial
    or a row of its columns)."""
    state = TrialState(trial.state)
    if state == TrialState.COMPLETED:
        return "completed"
    if state == TrialState.STOPPED and (trial.exit_reason or "").startswith(limits.TIME_LIMIT):
        return f"stopped: {trial.exit_reason}"
    if state == TrialState.STOPPED:
        return f"searcher stop: {trial.exit_reason or 'stopped by the searcher'}"
    if state == TrialState.ERRORED:
        return f"errored: {trial.exit_reason}" if trial.exit_reason else "errored"
    if state == TrialState.CANCELED:
        return "canceled"
    return searching.waiting_reason(trial)


def _workspace_name(workspace_id: int, session: Session) -> str:
    return session.scalar(select(orm.Workspace.name).where(orm.Workspace.id == workspace_id)) or ""


def _places(exps: list[orm.Experiment], session: Session) -> dict[int, tuple[str, str]]:
    """Project id -> (workspace name, project name), for the experiments' projects."""
    return {
        project_id: (workspace, project)
        for project_id, project, workspace in session.execute(
            select(orm.Project.id, orm.Project.name, orm.Workspace.name)
            .join(orm.Workspace, orm.Workspace.id == orm.Project.workspace_id)
            .where(orm.Project.id.in_({e.project_id for e in exps}))
        )
    }


def experiment_summary(
    exp: orm.Experiment, trials: list[api.TrialSummary], *, session: Session
) -> dict:
    smaller = config_of(exp).searcher.smaller_is_better
    best = _pick_best([t.best_validation for t in trials], smaller)
    best_trial = next(
        (t.id for t in trials if best is not None and t.best_validation == best), None
    )
    return _summary_fields(
        exp,
        place=_places([exp], session)[exp.project_id],
        trial_states=dict(Counter(t.state.value for t in trials)),
        best=best,
        best_trial=best_trial,
    )


def experiment_summaries(
    exps: list[orm.Experiment], *, session: Session
) -> list[api.ExperimentSummary]:
    """The same summaries as experiment_summary gives, for many experiments in a fixed
    number of queries (not a few per experiment): the experiment list shows hundreds."""
    if not exps:
        return []
    totals = experiment_totals.totals(exps, session)
    places = _places(exps, session)
    return [
        api.ExperimentSummary(
            **_summary_fields(
                exp,
                place=places[exp.project_id],
                trial_states=totals[exp.id].trial_states,
                best=totals[exp.id].best,
                best_trial=totals[exp.id].best_trial,
            )
        )
        for exp in exps
    ]


def _summary_fields(
    exp: orm.Experiment,
    *,
    place: tuple[str, str],
    trial_states: dict[str, int],
    best: float | None,
    best_trial: int | None,
) -> dict:
    searcher = config_of(exp).searcher
    return dict(
        id=exp.id,
        name=exp.name,
        description=exp.description,
        labels=exp.labels or [],
        workspace=place[0],
        project=place[1],
        owner=exp.owner,
        forked_from=exp.forked_from,
        rerun_of=exp.rerun_of,
        state=exp.state,
        searcher=searcher.name,
        metric=searcher.metric,
        smaller_is_better=searcher.smaller_is_better,
        progress=exp.progress,
        num_trials=sum(trial_states.values()),
        trial_states=trial_states,
        best_validation=best,
        best_trial_id=best_trial,
        created_at=exp.created_at,
        ended_at=exp.ended_at,
        archived=exp.archived,
    )


# The trial columns a TrialSummary shows, or end_reason reads. An experiment's trials are
# read as rows of these: loading 1,000 ORM objects (every column, and their identity map)
# cost more than the rest of GET /experiments/{id} together.
_TRIAL_TABLE_COLUMNS = [
    orm.Trial.__table__.c[name]
    for name in (
        "id",
        "experiment_id",
        "request_id",
        "state",
        "hparams",
        "restarts",
        "run_id",
        "steps_completed",
        "latest_checkpoint",
        "slots",
        "started_at",
        "ended_at",
        "searcher_info",
        "target_length",
        "parent_trial_id",
        "exit_reason",
        "waiting_for_searcher",
        "searcher_time",
    )
]


def experiment_trials(exp: orm.Experiment, *, session: Session) -> list[api.TrialSummary]:
    """The experiment's trials by id, in two queries: their columns, and the summary of
    their searcher metric (not of every metric, which a TrialSummary does not show)."""
    t = orm.Trial.__table__.c
    conn = session.connection()
    rows = conn.execute(
        select(*_TRIAL_TABLE_COLUMNS).where(t.experiment_id == exp.id).order_by(t.id)
    ).all()
    searcher = config_of(exp).searcher
    metric = searcher.metric
    values = _searcher_values(exp.id, metric, searcher.smaller_is_better, conn)
    return [
        api.TrialSummary(**_trial_fields(r, metric, *values.get(r.id, (None, None)))) for r in rows
    ]


def _searcher_values(
    exp_id: int, metric: str | None, smaller_is_better: bool, conn: Connection
) -> dict[int, tuple[float | None, float | None]]:
    """Trial id -> (best, latest) value of the searcher metric, for the experiment's trials."""
    ms, mk, t = orm.MetricSummary.__table__.c, orm.MetricKey.__table__.c, orm.Trial.__table__.c
    key = select(mk.id).where(mk.name == metric, mk.group == "validation").scalar_subquery()
    best = ms.min if smaller_is_better else ms.max
    rows = conn.execute(
        select(ms.trial_id, best, ms.last).where(
            ms.key_id == key, ms.trial_id.in_(select(t.id).where(t.experiment_id == exp_id))
        )
    ).all()
    return {trial_id: (best_value, last) for trial_id, best_value, last in rows}


def experiment_detail(exp: orm.Experiment, *, session: Session) -> api.ExperimentDetail:
    trials = experiment_trials(exp, session=session)
    return api.ExperimentDetail(
        **experiment_summary(exp, trials, session=session),
        config=checkpoint_storage.without_credentials(exp.config),
        context_id=exp.context_id,
        code=exp.code,
        trials=trials,
        searcher_summary=(exp.searcher_state or {}).get("summary") or {},
    )


def checkpoint_info(ckpt: orm.Checkpoint, validation: float | None) -> api.CheckpointInfo:
    return api.CheckpointInfo(
        uuid=ckpt.uuid,
        experiment_id=ckpt.experiment_id,
        trial_id=ckpt.trial_id,
        run_id=ckpt.run_id,
        steps_completed=ckpt.steps_completed,
        state=ckpt.state,
        metadata=ckpt.meta or {},
        resources=ckpt.resources or {},
        size=ckpt.size,
        storage_path=ckpt.storage_path,
        created_at=ckpt.created_at,
        validation=validation,
    )
