"""Trials of every experiment (archived ones too), filtered by state and by whether they
restarted, newest end first: the cluster page's recent failures and `shipyard trial list`.
"""

from __future__ import annotations

from collections.abc import Collection

from sqlalchemy import select
from sqlalchemy.orm import Session

from shipyard.common import api
from shipyard.common.states import TrialState
from shipyard.server import orm
from shipyard.server.services.trial_json import end_reason
from shipyard.server.services.workspaces import Visible, within


def list_trials(
    *,
    states: Collection[TrialState],
    restarted: bool | None,
    limit: int,
    visible: Visible,
    session: Session,
) -> list[api.TrialListItem]:
    """states: any of them (empty: every state); restarted: True only trials that restarted
    at least once, False only those that never did. Trials that have not ended come first
    (the newest first), then by end, the latest first."""
    t = orm.Trial
    query = (
        select(t, orm.Experiment.name)
        .join(orm.Experiment, orm.Experiment.id == t.experiment_id)
        .where(within(t.workspace_id, visible))
        .order_by(t.ended_at.desc().nulls_first(), t.id.desc())
        .limit(limit)
    )
    if states:
        query = query.where(t.state.in_([s.value for s in states]))
    if restarted is not None:
        query = query.where(t.restarts > 0 if restarted else t.restarts == 0)
    return [_item(trial, name) for trial, name in session.execute(query)]


def _item(trial: orm.Trial, experiment_name: str) -> api.TrialListItem:
    return api.TrialListItem(
        id=trial.id,
        experiment_id=trial.experiment_id,
        experiment_name=experiment_name,
        state=TrialState(trial.state),
        restarts=trial.restarts,
        run_id=trial.run_id,
        steps_completed=trial.steps_completed,
        started_at=trial.started_at,
        ended_at=trial.ended_at,
        exit_reason=trial.exit_reason,
        end_reason=end_reason(trial),
    )
