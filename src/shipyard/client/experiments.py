"""Experiments: create, read, change state, archive, wait, and read their trials' logs and
curves."""

from __future__ import annotations

import time
from typing import Literal

from shipyard.client.session import Session
from shipyard.common.api import (
    ActionResult,
    CreateExperimentRequest,
    Curve,
    ExperimentDetail,
    ExperimentOverview,
    ExperimentResources,
    ExperimentSummary,
    LogPage,
    MetricName,
    TrialSummary,
)
from shipyard.common.errors import ShipyardError

Archived = Literal["false", "true", "all"]  # hide archived experiments, only them, both


def create_experiment(session: Session, request: CreateExperimentRequest) -> ExperimentDetail:
    body = request.model_dump(mode="json")
    return ExperimentDetail.model_validate(session.post("/experiments", json=body))


def list_experiments(
    session: Session,
    *,
    limit: int | None = None,
    state: str | None = None,
    archived: Archived = "false",
    workspace: str | None = None,
    project: str | None = None,
) -> list[ExperimentSummary]:
    """Newest first, of the workspaces you see; `project`: of `workspace` (give both)."""
    params = {
        "limit": limit,
        "state": state,
        "archived": archived,
        "workspace": workspace,
        "project": project,
    }
    items = session.get("/experiments", params=params)
    return [ExperimentSummary.model_validate(item) for item in items]


def get_experiment(session: Session, experiment_id: int) -> ExperimentDetail:
    return ExperimentDetail.model_validate(session.get(f"/experiments/{experiment_id}"))


def get_experiment_summary(session: Session, experiment_id: int) -> ExperimentOverview:
    """The experiment and its config without its trials (lighter than get_experiment)."""
    return ExperimentOverview.model_validate(session.get(f"/experiments/{experiment_id}/summary"))


def pause_experiment(session: Session, experiment_id: int) -> ActionResult:
    return _action(session, experiment_id, "pause")


def activate_experiment(session: Session, experiment_id: int) -> ActionResult:
    return _action(session, experiment_id, "activate")


def kill_experiment(session: Session, experiment_id: int) -> ActionResult:
    return _action(session, experiment_id, "kill")


def archive_experiment(session: Session, experiment_id: int) -> ActionResult:
    return _action(session, experiment_id, "archive")


def unarchive_experiment(session: Session, experiment_id: int) -> ActionResult:
    return _action(session, experiment_id, "unarchive")


def set_experiment_resources(
    session: Session, experiment_id: int, changes: ExperimentResources
) -> ActionResult:
    body = changes.model_dump(include=changes.model_fields_set)
    return ActionResult.model_validate(
        session.patch(f"/experiments/{experiment_id}/resources", json=body)
    )


def _action(session: Session, experiment_id: int, verb: str) -> ActionResult:
    return ActionResult.model_validate(session.post(f"/experiments/{experiment_id}/{verb}"))


def list_experiment_trials(session: Session, experiment_id: int) -> list[TrialSummary]:
    items = session.get(f"/experiments/{experiment_id}/trials")
    return [TrialSummary.model_validate(item) for item in items]


def get_experiment_curves(
    session: Session,
    experiment_id: int,
    name: str,
    *,
    group: str = "validation",
    max_points: int | None = None,
) -> list[Curve]:
    """One metric of every trial that reported it, each downsampled to max_points (None:
    the master's choice for a chart of all the trials)."""
    params: dict[str, str | int] = {"name": name, "group": group}
    if max_points is not None:
        params["max_points"] = max_points
    items = session.get(f"/experiments/{experiment_id}/curves", params=params)
    return [Curve.model_validate(item) for item in items]


def list_experiment_metric_names(session: Session, experiment_id: int) -> list[MetricName]:
    items = session.get(f"/experiments/{experiment_id}/metric-names")
    return [MetricName.model_validate(item) for item in items]


def get_experiment_logs(
    session: Session, experiment_id: int, *, after: int = 0, limit: int = 1000, wait_s: float = 0
) -> LogPage:
    params = {"after": after, "limit": limit, "wait_s": wait_s}
    # A long-poll may legitimately hold the request for wait_s seconds.
    data = session.get(
        f"/experiments/{experiment_id}/logs", params=params, timeout_s=wait_s + session.timeout_s
    )
    return LogPage.model_validate(data)


def wait_for_experiment(
    session: Session,
    experiment_id: int,
    *,
    timeout_s: float | None = None,
    poll_s: float = 1.0,
) -> ExperimentDetail:
    """Poll until the experiment is COMPLETED, CANCELED or ERRORED; return its final detail."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        experiment = get_experiment(session, experiment_id)
        if experiment.state.terminal:
            return experiment
        if deadline is not None and time.monotonic() >= deadline:
            raise ShipyardError(
                f"experiment {experiment_id} is still {experiment.state} after {timeout_s:g} s"
            )
        time.sleep(poll_s if deadline is None else min(poll_s, max(deadline - time.monotonic(), 0)))
