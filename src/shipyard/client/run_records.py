"""What a trial's runs ran (code, environment, image), and two trials diffed."""

from __future__ import annotations

from shipyard.client.session import Session
from shipyard.common.api import ExperimentDetail
from shipyard.common.api_runs import TrialDiff, TrialEnvironment


def get_trial_environment(
    session: Session, trial_id: int, *, run_id: int | None = None
) -> TrialEnvironment:
    """One run of the trial (default: the latest that captured its environment)."""
    params = {"run_id": run_id} if run_id is not None else None
    return TrialEnvironment.model_validate(
        session.get(f"/trials/{trial_id}/environment", params=params)
    )


def diff_trials(session: Session, a: int, b: int, *, rank: int = 0) -> TrialDiff:
    """Every difference between what trials a and b ran, volatile fields left out."""
    return TrialDiff.model_validate(session.get(f"/trials/{a}/diff/{b}", params={"rank": rank}))


def rerun_trial(session: Session, trial_id: int, *, paused: bool = False) -> ExperimentDetail:
    """A new one-trial experiment running the trial again: same code snapshot, config,
    hyperparameters and seed (paused: it starts with activate)."""
    path = f"/trials/{trial_id}/rerun" + ("?paused=true" if paused else "")
    return ExperimentDetail.model_validate(session.post(path))
