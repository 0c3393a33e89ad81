from __future__ import annotations

from fastapi import APIRouter, Depends, Query, Response

from shipyard.common import api
from shipyard.common.states import TrialState
from shipyard.server.auth.principal import Principal, current_user
from shipyard.server.routers.experiments import poll_logs
from shipyard.server.routers.responses import json_response
from shipyard.server.services import checkpoints, logs, metric_series, trial_list, trials
from shipyard.server.state import MasterState, master

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


@router.get("/trials/{trial_id}/logs", operation_id="get_trial_logs", response_model=api.LogPage)
async def get_trial_logs(
    trial_id: int,
    after: int = Query(0, ge=0),
    limit: int = Query(1000, ge=1, le=10_000),
    wait_s: float = Query(0, ge=0, le=60),
    rank: int | None = Query(None, ge=0),
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> api.LogPage:
    """The trial's output, all runs; wait_s long-polls for lines after `after`. With `rank`,
    only that rank's lines (a multi-slot trial run by a launcher; the launcher's own lines
    are left out)."""

    def read() -> api.LogPage:
        with m.db.read() as s:
            trials.get(trial_id, session=s, visible=p.sees)
            return logs.page(
                trial_id=trial_id,
                experiment_id=None,
                after=after,
                limit=limit,
                rank=rank,
                session=s,
            )

    return await poll_logs(read, wait_s)


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
