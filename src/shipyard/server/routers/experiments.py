from __future__ import annotations

import asyncio
from typing import Literal

from fastapi import APIRouter, Depends, Query, Response
from starlette.concurrency import run_in_threadpool

from shipyard.common import api, api_teams
from shipyard.common.errors import InvalidRequest
from shipyard.server.auth.permissions import Action
from shipyard.server.auth.principal import Principal, current_user
from shipyard.server.routers.responses import json_list_response, json_response
from shipyard.server.services import (
    checkpoints,
    experiments,
    logs,
    metric_series,
    stored_curves,
    views,
    workspaces,
)
from shipyard.server.state import MasterState, master
from shipyard.server.workers.orchestrator import Reason

router = APIRouter(tags=["experiments"])


@router.post(
    "/experiments",
    operation_id="create_experiment",
    response_model=api.ExperimentDetail,
    status_code=201,
)
def create_experiment(
    req: api.CreateExperimentRequest,
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> api.ExperimentDetail:
    cfg = experiments.load_checked(req, p.grants, m.db)
    with m.db.write() as s:
        exp = experiments.create(
            req,
            cfg,
            default_checkpoint_base=str(m.settings.home / "checkpoints"),
            pools=m.pools,
            default_pool=m.default_pool,
            owner=p.username,
            grants=p.grants,
            session=s,
        )
        exp_id = exp.id
    m.orchestrator.wake(Reason.EXPERIMENT)
    with m.db.read() as s:
        return views.experiment_detail(
            experiments.get(exp_id, session=s, visible=p.sees), session=s
        )


@router.get(
    "/experiments", operation_id="list_experiments", response_model=list[api.ExperimentSummary]
)
def list_experiments(
    state: str | None = None,
    archived: Literal["false", "true", "all"] = Query(
        "false", description="false: hide archived experiments; true: only those; all: both"
    ),
    limit: int = Query(100, ge=1, le=10_000),
    workspace: str | None = Query(None, description="only this workspace's experiments"),
    project: str | None = Query(None, description="only this project's (with workspace)"),
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> Response:
    """Those of the workspaces you see, newest first."""
    if project is not None and workspace is None:
        raise InvalidRequest(
            "a project is named within a workspace",
            [{"path": "project", "message": "give workspace too"}],
        )
    only = {"false": False, "true": True, "all": None}[archived]
    with m.db.read() as s:
        return json_response(
            experiments.list_summaries(
                state=state,
                archived=only,
                limit=limit,
                visible=p.sees,
                workspace=workspace,
                project=project,
                session=s,
            )
        )


@router.get(
    "/experiments/{exp_id}", operation_id="get_experiment", response_model=api.ExperimentDetail
)
def get_experiment(
    exp_id: int, p: Principal = Depends(current_user), m: MasterState = Depends(master)
) -> Response:
    with m.db.read() as s:
        return json_response(
            views.experiment_detail(experiments.get(exp_id, session=s, visible=p.sees), session=s)
        )


@router.get(
    "/experiments/{exp_id}/summary",
    operation_id="get_experiment_summary",
    response_model=api.ExperimentOverview,
)
def get_experiment_summary(
    exp_id: int, p: Principal = Depends(current_user), m: MasterState = Depends(master)
) -> Response:
    """The experiment without its trials: its entry in the list (state, searcher, metric,
    best value, trials by state) and its config. Its trials: GET .../trials."""
    with m.db.read() as s:
        return json_response(experiments.overview(exp_id, visible=p.sees, session=s))


def _act(
    m: MasterState, p: Principal, exp_id: int, action, *, wake: bool = True
) -> api.ActionResult:
    """``wake``: the orchestrator acts on the change (not for archiving, which changes
    nothing it runs)."""
    with m.db.write() as s:
        experiments.require_edit(
            experiments.get(exp_id, session=s, visible=p.sees), p.grants, p.username
        )
        exp = action(exp_id, session=s)
        result = api.ActionResult(id=exp.id, state=exp.state)
    if wake:
        m.orchestrator.wake(Reason.EXPERIMENT)
    return result


@router.post(
    "/experiments/{exp_id}/pause", operation_id="pause_experiment", response_model=api.ActionResult
)
def pause_experiment(
    exp_id: int, p: Principal = Depends(current_user), m: MasterState = Depends(master)
) -> api.ActionResult:
    """Running trials checkpoint and exit; the experiment resumes from there on activate."""
    return _act(m, p, exp_id, experiments.pause)


@router.post(
    "/experiments/{exp_id}/activate",
    operation_id="activate_experiment",
    response_model=api.ActionResult,
)
def activate_experiment(
    exp_id: int, p: Principal = Depends(current_user), m: MasterState = Depends(master)
) -> api.ActionResult:
    return _act(m, p, exp_id, experiments.activate)


@router.post(
    "/experiments/{exp_id}/kill", operation_id="kill_experiment", response_model=api.ActionResult
)
def kill_experiment(
    exp_id: int, p: Principal = Depends(current_user), m: MasterState = Depends(master)
) -> api.ActionResult:
    """Cancel the experiment: running trials are terminated (process group)."""
    return _act(m, p, exp_id, experiments.kill)


@router.post(
    "/experiments/{exp_id}/archive",
    operation_id="archive_experiment",
    response_model=api.ActionResult,
)
def archive_experiment(
    exp_id: int, p: Principal = Depends(current_user), m: MasterState = Depends(master)
) -> api.ActionResult:
    """Hide an ended experiment from lists; 409 while it runs (kill it first)."""
    return _act(m, p, exp_id, experiments.archive, wake=False)


@router.post(
    "/experiments/{exp_id}/unarchive",
    operation_id="unarchive_experiment",
    response_model=api.ActionResult,
)
def unarchive_experiment(
    exp_id: int, p: Principal = Depends(current_user), m: MasterState = Depends(master)
) -> api.ActionResult:
    return _act(m, p, exp_id, experiments.unarchive, wake=False)


@router.patch(
    "/experiments/{exp_id}/resources",
    operation_id="set_experiment_resources",
    response_model=api.ActionResult,
)
def set_experiment_resources(
    exp_id: int,
    changes: api.ExperimentResources,
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> api.ActionResult:
    """Change priority, weight or max_slots while the experiment runs."""
    return _act(
        m, p, exp_id, lambda eid, session: experiments.set_resources(eid, changes, session=session)
    )


@router.post(
    "/experiments/{exp_id}/move", operation_id="move_experiment", response_model=api.ActionResult
)
def move_experiment(
    exp_id: int,
    req: api_teams.MoveExperimentRequest,
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> api.ActionResult:
    """Into another project, of its workspace or another one where you may submit."""
    with m.db.write() as s:
        exp = experiments.get(exp_id, session=s, visible=p.sees)
        experiments.require_edit(exp, p.grants, p.username)
        ws = workspaces.get(req.workspace, visible=p.sees, session=s)
        p.grants.require(Action.CREATE_EXPERIMENT, ws.id, f"workspace {ws.name!r}")
        workspaces.move_experiment(
            exp, workspaces.get_project(ws, req.project, session=s), session=s
        )
        return api.ActionResult(id=exp.id, state=exp.state)


@router.get(
    "/experiments/{exp_id}/trials",
    operation_id="list_experiment_trials",
    response_model=list[api.TrialSummary],
)
def list_experiment_trials(
    exp_id: int, p: Principal = Depends(current_user), m: MasterState = Depends(master)
) -> Response:
    with m.db.read() as s:
        return json_response(
            views.experiment_trials(experiments.get(exp_id, session=s, visible=p.sees), session=s)
        )


@router.get(
    "/experiments/{exp_id}/curves",
    operation_id="get_experiment_curves",
    response_model=list[api.Curve],
)
def get_experiment_curves(
    exp_id: int,
    name: str = Query(..., min_length=1, description="the metric"),
    group: Literal["validation", "training"] = "validation",
    max_points: int | None = Query(
        None,
        ge=2,
        le=metric_series.MAX_POINTS,
        description="points per series at most; by default what a chart of all the "
        "experiment's trials draws: 400 up to 500 trials, then fewer (200,000 in all)",
    ),
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> Response:
    """One metric of every trial that reported it, by trial id, each series downsampled to
    max_points (its first and last points, and each part of its step range's min and max)."""
    with m.db.read() as s:
        experiments.get(exp_id, session=s, visible=p.sees)
        found = metric_series.curves(
            exp_id, name=name, group=group, max_points=max_points, session=s
        )
    stored_curves.store(m.db, found.to_store, exp_id)  # ended trials' curves computed first now
    return json_list_response(found.bodies)


@router.get(
    "/experiments/{exp_id}/metric-names",
    operation_id="list_experiment_metric_names",
    response_model=list[api.MetricName],
)
def list_experiment_metric_names(
    exp_id: int, p: Principal = Depends(current_user), m: MasterState = Depends(master)
) -> list[api.MetricName]:
    """Every (name, group) a trial of the experiment reported, by group then name."""
    with m.db.read() as s:
        experiments.get(exp_id, session=s, visible=p.sees)
        return metric_series.names(exp_id, session=s)


@router.get(
    "/experiments/{exp_id}/checkpoints",
    operation_id="list_experiment_checkpoints",
    response_model=list[api.CheckpointInfo],
)
def list_experiment_checkpoints(
    exp_id: int, p: Principal = Depends(current_user), m: MasterState = Depends(master)
) -> list[api.CheckpointInfo]:
    with m.db.read() as s:
        experiments.get(exp_id, session=s, visible=p.sees)
        return checkpoints.list_for_experiment(exp_id, session=s)


@router.get(
    "/experiments/{exp_id}/logs", operation_id="get_experiment_logs", response_model=api.LogPage
)
async def get_experiment_logs(
    exp_id: int,
    after: int = Query(0, ge=0),
    limit: int = Query(1000, ge=1, le=10_000),
    wait_s: float = Query(0, ge=0, le=60),
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> api.LogPage:
    """All the experiment's trials' output; wait_s long-polls for lines after `after`."""

    def read() -> api.LogPage:
        with m.db.read() as s:
            experiments.get(exp_id, session=s, visible=p.sees)
            return logs.page(
                trial_id=None, experiment_id=exp_id, after=after, limit=limit, session=s
            )

    return await poll_logs(read, wait_s)


async def poll_logs(read, wait_s: float) -> api.LogPage:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_s
    while True:
        page = await run_in_threadpool(read)
        if page.lines or page.done or loop.time() >= deadline:
            return page
        await asyncio.sleep(0.25)
