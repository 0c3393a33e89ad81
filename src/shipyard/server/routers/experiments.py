from __future__ import annotations

import asyncio
from typing import Literal

from fastapi import APIRouter, Depends, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from shipyard.common import api, api_experiments, api_teams, metric_groups
from shipyard.common.errors import InvalidRequest
from shipyard.server.auth.permissions import Action
from shipyard.server.auth.principal import Principal, current_user
from shipyard.server.routers.auth import address
from shipyard.server.routers.responses import (
    json_bytes_response,
    json_list_response,
    json_response,
)
from shipyard.server.services import (
    checkpoints,
    experiment_continue,
    experiment_records,
    experiments,
    logs,
    metric_series,
    stored_curves,
    trial_json,
    trial_rerun,
    trials,
    views,
    workspaces,
)
from shipyard.server.state import MasterState, master
from shipyard.server.workers.orchestrator import Reason

router = APIRouter(tags=["experiments"])
TOTAL_HEADER = "X-Total-Count"


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
) -> Response:
    return json_bytes_response(_create(req, p, m), status_code=201)


def _create(
    req: api.CreateExperimentRequest,
    p: Principal,
    m: MasterState,
    forked_from: int | None = None,
    rerun: tuple[int, int] | None = None,
) -> bytes:
    """The new experiment's api.ExperimentDetail (JSON). rerun: (trial id, its seed) for
    `trial rerun`."""
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
            forked_from=forked_from,
            rerun_of=rerun[0] if rerun else None,
            trial_seed=rerun[1] if rerun else None,
        )
        exp_id = exp.id
    m.orchestrator.wake(Reason.EXPERIMENT)
    with m.db.read() as s:
        return views.experiment_detail(
            experiments.get(exp_id, session=s, visible=p.sees), session=s
        )


@router.get(
    "/experiments",
    operation_id="list_experiments",
    response_model=list[api.ExperimentSummary],
    responses={
        200: {
            "headers": {
                TOTAL_HEADER: {
                    "description": "how many experiments the filters select in all",
                    "schema": {"type": "integer"},
                }
            }
        }
    },
)
def list_experiments(
    state: str | None = None,
    archived: Literal["false", "true", "all"] = Query(
        "false", description="false: hide archived experiments; true: only those; all: both"
    ),
    limit: int = Query(100, ge=1, le=10_000),
    offset: int = Query(0, ge=0, le=2**31, description="skip this many (newest first)"),
    workspace: str | None = Query(None, description="only this workspace's experiments"),
    project: str | None = Query(None, description="only this project's (with workspace)"),
    label: list[str] = Query(
        [], description="only those with this label (repeat it: those with every one)"
    ),
    user: str | None = Query(None, description="only those this user submitted"),
    name: str | None = Query(None, description="only those whose name contains this (any case)"),
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> Response:
    """Those of the workspaces you see, newest first; the X-Total-Count header says how
    many the filters select in all (a page is `limit` of them from `offset`)."""
    if project is not None and workspace is None:
        raise InvalidRequest(
            "a project is named within a workspace",
            [{"path": "project", "message": "give workspace too"}],
        )
    only = {"false": False, "true": True, "all": None}[archived]
    with m.db.read() as s:
        page, total = experiment_records.list_page(
            state=state,
            archived=only,
            limit=limit,
            offset=offset,
            visible=p.sees,
            workspace=workspace,
            project=project,
            labels=label,
            user=user,
            name=name,
            session=s,
        )
    response = json_response(page)
    response.headers[TOTAL_HEADER] = str(total)
    return response


@router.get(
    "/experiments/{exp_id}", operation_id="get_experiment", response_model=api.ExperimentDetail
)
def get_experiment(
    exp_id: int, p: Principal = Depends(current_user), m: MasterState = Depends(master)
) -> Response:
    with m.db.read() as s:
        return json_bytes_response(
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


@router.patch(
    "/experiments/{exp_id}", operation_id="change_experiment", response_model=api.ExperimentSummary
)
def change_experiment(
    exp_id: int,
    req: api_experiments.ExperimentChange,
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> Response:
    """Rename it, describe it, add and remove labels (what people see; its config keeps
    the values it was submitted with)."""
    with m.db.write() as s:
        exp = experiments.get(exp_id, session=s, visible=p.sees)
        experiments.require_edit(exp, p.grants, p.username)
        experiment_records.change(exp, req)
        s.flush()
        [summary] = views.experiment_summaries([exp], session=s)
    return json_response(summary)


@router.delete(
    "/experiments/{exp_id}",
    operation_id="delete_experiment",
    response_model=api_experiments.ExperimentDeleted,
)
def delete_experiment(
    exp_id: int,
    request: Request,
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> api_experiments.ExperimentDeleted:
    """Delete an ended experiment with its trials, metrics, logs and checkpoints (their
    files too); 409 while it runs. Nothing of another experiment is touched. It is
    archived first, and stays so if its storage fails to delete a file (then try again).
    Recorded in the audit log."""
    deleted = experiment_records.delete_experiment(
        m.db,
        exp_id,
        home=m.settings.home,
        visible=p.sees,
        grants=p.grants,
        username=p.username,
        address=address(request),
    )
    m.orchestrator.driver.searchers.forget(exp_id)  # its id may come back (SQLite)
    return api_experiments.ExperimentDeleted(id=exp_id, checkpoints_deleted=deleted)


@router.post(
    "/experiments/{exp_id}/fork",
    operation_id="fork_experiment",
    response_model=api.ExperimentDetail,
    status_code=201,
)
def fork_experiment(
    exp_id: int,
    req: api_experiments.ForkExperimentRequest,
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> Response:
    """A new experiment from this one's config (with req's changes) and code snapshot;
    this one is not changed. Anyone who sees it may fork it into a workspace where they
    may submit; if its checkpoint storage has a literal secret_key, only its owner or a
    workspace admin may keep that key in the fork (403: give keys of your own)."""
    with m.db.read() as s:
        original = experiments.get(exp_id, session=s, visible=p.sees)
        create_req = experiment_continue.fork_request(original, req)
        experiment_continue.require_own_keys(original, create_req, p.grants, p.username)
    return json_bytes_response(_create(create_req, p, m, forked_from=exp_id), status_code=201)


@router.post(
    "/trials/{trial_id}/rerun",
    operation_id="rerun_trial",
    response_model=api.ExperimentDetail,
    status_code=201,
)
def rerun_trial(
    trial_id: int,
    paused: bool = Query(False, description="create it paused: it starts with activate"),
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> Response:
    """A new one-trial experiment that runs this trial again: its experiment's code
    snapshot and config, the trial's hyperparameters and its seed. Anyone who sees the trial
    may rerun it into a workspace where they may submit (as for a fork)."""
    with m.db.read() as s:
        trial = trials.get(trial_id, session=s, visible=p.sees)
        original = trials.experiment_of(trial.id, session=s)
        create_req = trial_rerun.rerun_request(trial, original, paused=paused)
        experiment_continue.require_own_keys(original, create_req, p.grants, p.username)
        rerun = (trial.id, trial.seed, original.id)
    made = _create(create_req, p, m, forked_from=rerun[2], rerun=rerun[:2])
    return json_bytes_response(made, status_code=201)


@router.post(
    "/experiments/{exp_id}/continue",
    operation_id="continue_experiment",
    response_model=api.ActionResult,
)
def continue_experiment(
    exp_id: int,
    req: api_experiments.ContinueExperimentRequest,
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> api.ActionResult:
    """More training for an ended single, random or grid search, in place: its trials that
    did not complete, and those a longer max_length lets train further, resume from their
    latest checkpoints; max_trials adds trials to a random search. Its metrics,
    checkpoints and trials are kept. 409 while it runs or when there is nothing to do."""
    with m.db.write() as s:
        exp = experiments.get(exp_id, session=s, visible=p.sees)
        experiments.require_edit(exp, p.grants, p.username)
        experiment_continue.continue_(exp, req, session=s)
        result = api.ActionResult(id=exp.id, state=exp.state)
        # Before the commit: a trial placed once it is committed reads the new config (a
        # failed commit leaves the new one for an ended experiment, rewritten at the next
        # continue).
        experiment_continue.refresh_config_file(m.settings.home, exp_id, exp.config)
    m.orchestrator.wake(Reason.EXPERIMENT)
    return result


@router.get(
    "/experiments/{exp_id}/trials",
    operation_id="list_experiment_trials",
    response_model=list[api.TrialSummary],
)
def list_experiment_trials(
    exp_id: int, p: Principal = Depends(current_user), m: MasterState = Depends(master)
) -> Response:
    with m.db.read() as s:
        exp = experiments.get(exp_id, session=s, visible=p.sees)
        return json_bytes_response(
            views.experiment_trials(trial_json.experiment_trials(exp, session=s))
        )


@router.get(
    "/experiments/{exp_id}/curves",
    operation_id="get_experiment_curves",
    response_model=list[api.Curve],
)
def get_experiment_curves(
    exp_id: int,
    name: str = Query(..., min_length=1, description="the metric"),
    group: str = Query(
        "validation", pattern=metric_groups.PATTERN, description="the metric's group"
    ),
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
