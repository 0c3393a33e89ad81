"""Experiments: create, read, list by page, change state and record, fork, continue, delete,
wait, and read their trials' logs and curves."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

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
from shipyard.common.api_experiments import (
    ContinueExperimentRequest,
    ExperimentDeleted,
    ForkExperimentRequest,
)
from shipyard.common.errors import ShipyardError

Archived = Literal["false", "true", "all"]  # hide archived experiments, only them, both


def create_experiment(session: Session, request: CreateExperimentRequest) -> ExperimentDetail:
    body = request.model_dump(mode="json")
    return ExperimentDetail.model_validate(session.post("/experiments", json=body))


@dataclass(frozen=True)
class ExperimentPage:
    """One page of a filtered list, and how many experiments the filters select in all."""

    items: list[ExperimentSummary]
    total: int
    offset: int

    @property
    def more(self) -> int:
        """How many come after this page."""
        return max(self.total - self.offset - len(self.items), 0)


def list_experiments_page(
    session: Session,
    *,
    limit: int | None = None,
    offset: int = 0,
    state: str | None = None,
    archived: Archived = "false",
    workspace: str | None = None,
    project: str | None = None,
    labels: Sequence[str] = (),
    user: str | None = None,
    name: str | None = None,
) -> ExperimentPage:
    """Newest first, of the workspaces you see; `project`: of `workspace` (give both);
    `labels`: those with every one; `name`: a part of the name; `user`: the owner."""
    params = {
        "limit": limit,
        "offset": offset or None,
        "state": state,
        "archived": archived,
        "workspace": workspace,
        "project": project,
        "label": list(labels) or None,
        "user": user,
        "name": name,
    }
    items, headers = session.get_with_headers("/experiments", params=params)
    found = [ExperimentSummary.model_validate(item) for item in items]
    total = headers.get("x-total-count")
    return ExperimentPage(found, int(total) if total is not None else len(found), offset)


def list_experiments(
    session: Session,
    *,
    limit: int | None = None,
    state: str | None = None,
    archived: Archived = "false",
    workspace: str | None = None,
    project: str | None = None,
    offset: int = 0,
    labels: Sequence[str] = (),
    user: str | None = None,
    name: str | None = None,
) -> list[ExperimentSummary]:
    """list_experiments_page's items."""
    return list_experiments_page(
        session,
        limit=limit,
        offset=offset,
        state=state,
        archived=archived,
        workspace=workspace,
        project=project,
        labels=labels,
        user=user,
        name=name,
    ).items


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


def change_experiment(
    session: Session,
    experiment_id: int,
    *,
    name: str | None = None,
    description: str | None = None,
    add_labels: Sequence[str] = (),
    remove_labels: Sequence[str] = (),
) -> ExperimentSummary:
    """Rename it, describe it, add or remove labels (None and empty: unchanged)."""
    body: dict[str, object] = {"add_labels": list(add_labels), "remove_labels": list(remove_labels)}
    if name is not None:
        body["name"] = name
    if description is not None:
        body["description"] = description
    return ExperimentSummary.model_validate(
        session.patch(f"/experiments/{experiment_id}", json=body)
    )


def delete_experiment(session: Session, experiment_id: int) -> ExperimentDeleted:
    """An ended experiment, with its trials, metrics, logs and checkpoints' files."""
    return ExperimentDeleted.model_validate(session.delete(f"/experiments/{experiment_id}"))


def fork_experiment(
    session: Session,
    experiment_id: int,
    *,
    overrides: Mapping[str, Any] | None = None,
    config_yaml: str | None = None,
    config_file: str = "config.yaml",
    paused: bool = False,
) -> ExperimentDetail:
    """A new experiment from this one's config and code: config_yaml merged over the
    config, then overrides ({"hyperparameters.lr": 0.1}) set."""
    request = ForkExperimentRequest(
        overrides=dict(overrides or {}),
        config_yaml=config_yaml,
        config_file=config_file,
        paused=paused,
    )
    body = request.model_dump(mode="json")
    return ExperimentDetail.model_validate(
        session.post(f"/experiments/{experiment_id}/fork", json=body)
    )


def continue_experiment(
    session: Session,
    experiment_id: int,
    *,
    max_length: int | None = None,
    max_trials: int | None = None,
) -> ActionResult:
    """Train an ended single, random or grid search further, in place (see the route)."""
    body = ContinueExperimentRequest(max_length=max_length, max_trials=max_trials)
    return ActionResult.model_validate(
        session.post(f"/experiments/{experiment_id}/continue", json=body.model_dump())
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
