"""ORM rows -> API bodies (common/api.py)."""

from __future__ import annotations

from collections import Counter

from sqlalchemy import select
from sqlalchemy.orm import Session

from shipyard.common import api
from shipyard.server import orm
from shipyard.server.services import (
    checkpoint_storage,
    experiment_totals,
    metrics,
    trial_json,
)
from shipyard.server.services.experiment_config import config_of
from shipyard.server.services.trial_json import trial_fields


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
        fields = trial_fields(t, metric, best, last)
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
    exp: orm.Experiment, trials: list[trial_json.TrialJSON], *, session: Session
) -> dict:
    smaller = config_of(exp).searcher.smaller_is_better
    best = _pick_best([t.best_validation for t in trials], smaller)
    best_trial = next(
        (t.id for t in trials if best is not None and t.best_validation == best), None
    )
    return _summary_fields(
        exp,
        place=_places([exp], session)[exp.project_id],
        trial_states=dict(Counter(t.state for t in trials)),
        best=best,
        best_trial=best_trial,
    )


def experiment_detail(exp: orm.Experiment, *, session: Session) -> bytes:
    """The api.ExperimentDetail's JSON, its trials' JSON as trial_json keeps it."""
    trials = trial_json.experiment_trials(exp, session=session)
    detail = api.ExperimentDetail(
        **experiment_summary(exp, trials, session=session),
        config=checkpoint_storage.without_credentials(exp.config),
        context_id=exp.context_id,
        code=exp.code,
        searcher_summary=(exp.searcher_state or {}).get("summary") or {},
    )
    without_trials = detail.model_dump_json(exclude={"trials"}).encode()
    return b"".join((without_trials[:-1], b',"trials":', experiment_trials(trials), b"}"))


def experiment_trials(trials: list[trial_json.TrialJSON]) -> bytes:
    """A JSON list of the trials' summaries."""
    return b"[" + b",".join(t.json for t in trials) + b"]"


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
