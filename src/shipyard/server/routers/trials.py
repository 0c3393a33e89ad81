from __future__ import annotations

import asyncio
from datetime import datetime

from fastapi import APIRouter, Depends, Query, Response
from starlette.concurrency import run_in_threadpool

from shipyard.common import api
from shipyard.common.states import TrialState
from shipyard.server.auth.principal import Principal, current_user
from shipyard.server.routers.responses import json_response
from shipyard.server.services import (
    checkpoints,
    experiments,
    logs,
    metric_series,
    trial_kill,
    trial_list,
    trials,
)
from shipyard.server.state import MasterState, master
from shipyard.server.workers.orchestrator import Reason

router = APIRouter(tags=["trials"])

MAX_LISTED = 1000  # trials a list answer holds at most


@router.get("/trials", operation_id="list_trials", response_model=list[api.TrialListItem])
def list_trials(
    state: list[TrialState] = Query(
        [], description="only trials in these states (repeat it for several); all by default"
    ),
    restarted: bool | None = Query(
        None, description="true: only trials that restarted at least once; false: never"
    ),
    limit: int = Query(100, ge=1, le=MAX_LISTED),
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> Response:
    """Trials of every experiment (archived ones too): those that have not ended first, then
    the latest to end first. E.g. recent failures: ?state=ERRORED&limit=20."""
    with m.db.read() as s:
        return json_response(
            trial_list.list_trials(
                states=state, restarted=restarted, limit=limit, visible=p.sees, session=s
            )
        )


@router.get("/trials/{trial_id}", operation_id="get_trial", response_model=api.TrialDetail)
def get_trial(
    trial_id: int, p: Principal = Depends(current_user), m: MasterState = Depends(master)
) -> api.TrialDetail:
    with m.db.read() as s:
        return trials.detail(trial_id, visible=p.sees, session=s)


@router.post("/trials/{trial_id}/kill", operation_id="kill_trial", response_model=api.ActionResult)
def kill_trial(
    trial_id: int, p: Principal = Depends(current_user), m: MasterState = Depends(master)
) -> api.ActionResult:
    """Kill one trial, as Determined does: it ends CANCELED and its experiment goes on with
    its other trials. A queued or paused trial ends at once; a running one is terminated
    (its state is still RUNNING in this answer, CANCELED once its process has exited).
    409 for a trial that has already ended otherwise; killing a CANCELED one changes nothing."""
    with m.db.write() as s:
        trial = trials.get(trial_id, session=s, visible=p.sees)
        experiments.require_edit(
            experiments.get(trial.experiment_id, session=s), p.grants, p.username
        )
        trial = trial_kill.kill(trial_id, username=p.username, session=s)
        result = api.ActionResult(id=trial.id, state=trial.state)
    m.hub.bump(trial_id)  # its long-poll hears the stop now
    m.orchestrator.wake(Reason.EXPERIMENT)
    return result


@router.get("/trials/{trial_id}/logs", operation_id="get_trial_logs", response_model=api.LogPage)
async def get_trial_logs(
    trial_id: int,
    after: int = Query(0, ge=0),
    limit: int = Query(1000, ge=1, le=10_000),
    wait_s: float = Query(0, ge=0, le=60),
    rank: int | None = Query(None, ge=0),
    tail: int | None = Query(
        None,
        ge=1,
        le=10_000,
        description="only the last `tail` lines (of those the other filters keep); "
        "next_after is then the trial's latest line, to follow from",
    ),
    since: datetime | None = Query(
        None, description="only lines the master received at or after this time (ISO 8601)"
    ),
    grep: str | None = Query(
        None,
        min_length=1,
        max_length=logs.MAX_GREP,
        description="only lines that contain this text (case-sensitive; not a regex)",
    ),
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> api.LogPage:
    """The trial's output, all runs; wait_s long-polls for lines after `after`. With `rank`,
    only that rank's lines (a multi-slot trial run by a launcher; the launcher's own lines
    are left out). The filters (`since`, `grep`) are applied here, so only the lines they
    keep are sent; a filtered page may hold no line and still move next_after on (lines
    were read and left out): read on from next_after until it stays where it was."""
    where = logs.Filters(rank=rank, since=since, grep=grep)
    cursor = after

    def read() -> api.LogPage:
        with m.db.read() as s:
            trials.get(trial_id, session=s, visible=p.sees)
            return logs.page(
                trial_id=trial_id,
                experiment_id=None,
                after=cursor,
                limit=limit,
                session=s,
                filters=where,
                tail=tail,
            )

    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_s
    while True:
        page = await run_in_threadpool(read)
        if page.lines or page.done or loop.time() >= deadline or tail is not None:
            return page
        cursor = page.next_after  # lines left out by the filters are not read twice
        await asyncio.sleep(0.25)


@router.get(
    "/trials/{trial_id}/metrics",
    operation_id="get_trial_metrics",
    response_model=list[api.MetricSeries],
)
def get_trial_metrics(
    trial_id: int,
    group: str | None = None,
    name: str | None = None,
    max_points: int | None = Query(
        None, ge=2, le=metric_series.MAX_POINTS, description="downsample each series to this"
    ),
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> Response:
    """The trial's metric series; with max_points, each keeps its first and last points and
    the min and max of each part of its step range, at most max_points in all."""
    with m.db.read() as s:
        trials.get(trial_id, session=s, visible=p.sees)
        return json_response(
            metric_series.series(trial_id, group=group, name=name, max_points=max_points, session=s)
        )


@router.get(
    "/trials/{trial_id}/checkpoints",
    operation_id="list_trial_checkpoints",
    response_model=list[api.CheckpointInfo],
)
def list_trial_checkpoints(
    trial_id: int, p: Principal = Depends(current_user), m: MasterState = Depends(master)
) -> Response:
    """The trial's checkpoints by step (deleted ones left out), as the experiment's list
    gives them."""
    with m.db.read() as s:
        trials.get(trial_id, session=s, visible=p.sees)
        return json_response(checkpoints.list_for_trial(trial_id, session=s))
