"""What a trial's runs ran, and two trials diffed (issue 20)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query

from shipyard.common import api_runs
from shipyard.server.auth.principal import Principal, current_user
from shipyard.server.services import run_records
from shipyard.server.state import MasterState, master

router = APIRouter(tags=["trials"])


@router.get(
    "/trials/{trial_id}/environment",
    operation_id="get_trial_environment",
    response_model=api_runs.TrialEnvironment,
)
def get_trial_environment(
    trial_id: int,
    run_id: int | None = Query(
        None, ge=0, description="which run (default: the latest that captured one)"
    ),
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> api_runs.TrialEnvironment:
    """The code (git at submit, the snapshot's hash), hyperparameters, seed, image and each
    rank's captured environment of one run of the trial."""
    with m.db.read() as s:
        return run_records.trial_environment(trial_id, run_id, visible=p.sees, session=s)


@router.get(
    "/trials/{trial_id}/diff/{other_id}",
    operation_id="diff_trials",
    response_model=api_runs.TrialDiff,
)
def diff_trials(
    trial_id: int,
    other_id: int,
    rank: int = Query(0, ge=0, le=run_records.MAX_RANK, description="whose capture to compare"),
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> api_runs.TrialDiff:
    """Every difference between what two trials ran (of one experiment or of two), by
    category; volatile fields (host, time, GPU UUIDs) are left out."""
    with m.db.read() as s:
        return run_records.diff(trial_id, other_id, rank, visible=p.sees, session=s)
