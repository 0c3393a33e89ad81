"""One trial as the API shows it: found by id, and its detail (`shipyard trial describe`)."""

from __future__ import annotations

from sqlalchemy.orm import Session

from shipyard.common import api
from shipyard.common.errors import NotFound
from shipyard.common.states import TrialState
from shipyard.server import orm
from shipyard.server.services import experiments, logs, views
from shipyard.server.services.workspaces import Visible, get_visible

LAST_LOG_LINES = 20  # an errored or restarted trial's detail shows its last lines of output


def get(trial_id: int, *, session: Session, visible: Visible = None) -> orm.Trial:
    """visible: the workspaces the caller sees (None: all); one in another is not found."""
    trial = get_visible(orm.Trial, trial_id, visible, session)
    if trial is None:
        raise NotFound(f"trial {trial_id} does not exist")
    return trial


def experiment_of(trial_id: int, *, session: Session) -> orm.Experiment:
    """The experiment a trial belongs to (NotFound for no such trial)."""
    return session.get_one(orm.Experiment, get(trial_id, session=session).experiment_id)


def detail(trial_id: int, *, visible: Visible, session: Session) -> api.TrialDetail:
    trial = get(trial_id, session=session, visible=visible)
    exp = experiments.get(trial.experiment_id, session=session)
    found = views.trial_summaries(exp, [trial], session=session, detail=True)[0]
    assert isinstance(found, api.TrialDetail)  # detail=True builds TrialDetail
    if TrialState(trial.state) == TrialState.ERRORED or trial.restarts:
        found.last_log_lines = logs.tail(trial_id, LAST_LOG_LINES, session=session)
    return found
