"""The scheduler's queue, as `shipyard job list` shows it."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from shipyard.common import api
from shipyard.server.auth.principal import Principal, current_user
from shipyard.server.services import jobs
from shipyard.server.state import MasterState, master

router = APIRouter(tags=["jobs"])


@router.get("/jobs", operation_id="list_jobs", response_model=list[api.JobInfo])
def list_jobs(
    p: Principal = Depends(current_user), m: MasterState = Depends(master)
) -> list[api.JobInfo]:
    """Running trials, then queued ones in the order the scheduler takes them, each with
    the reason it waits."""
    with m.db.read() as s:
        problems = {name: m.backend.health_of(name) for name in m.pools}
        return jobs.job_list(m.pools, session=s, visible=p.sees, problems=problems)
