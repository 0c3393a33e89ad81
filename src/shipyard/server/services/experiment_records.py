"""An experiment's record: its name, description and labels changed; the list of
experiments filtered and paged; an ended experiment deleted with everything it made."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session, defer, object_session

from shipyard.common import api
from shipyard.common.api_experiments import ExperimentChange
from shipyard.common.errors import ConfigError, Conflict, ShipyardError
from shipyard.common.states import ExperimentState, TrialState
from shipyard.common.tensorboard_layout import experiment_prefix
from shipyard.server import orm
from shipyard.server.auth.permissions import Grants
from shipyard.server.db import Database
from shipyard.server.services import (
    artifacts,
    audit,
    checkpoint_gc,
    checkpoint_storage,
    checkpoints,
    model_refs,
    views,
    workspaces,
)
from shipyard.server.services.checkpoints import DELETED
from shipyard.server.services.experiments import get, require_edit
from shipyard.server.services.workspaces import Visible, within

log = logging.getLogger(__name__)


def change(exp: orm.Experiment, req: ExperimentChange) -> orm.Experiment:
    """Name, description, labels: what a person sees, never what the experiment runs. The
    config keeps the values it was submitted with."""
    if req.name is not None:
        exp.name = req.name
    if req.description is not None:
        exp.description = req.description
    if req.add_labels or req.remove_labels:
        labels = [label for label in exp.labels or [] if label not in req.remove_labels]
        labels += [
            label for label in dict.fromkeys(req.add_labels) if label not in labels
        ]  # in the order given, each once
        exp.labels = labels  # a new list: the JSON column is saved only when assigned
    return exp


# -- the list -------------------------------------------------------------------------------


def list_page(
    *,
    state: str | None,
    archived: bool | None,
    limit: int,
    offset: int,
    visible: Visible,
    workspace: str | None = None,
    project: str | None = None,
    labels: list[str] | None = None,
    user: str | None = None,
    name: str | None = None,
    session: Session,
) -> tuple[list[api.ExperimentSummary], int]:
    """One page of the experiments the filters select, newest first, and how many they
    select in all. labels: each one must be among its labels; name: a part of its name
    (any case); user: its owner."""
    query = select(orm.Experiment).where(within(orm.Experiment.workspace_id, visible))
    if workspace is not None:
        ws = workspaces.get(workspace, visible=visible, session=session)
        query = query.where(orm.Experiment.workspace_id == ws.id)
        if project is not None:
            query = query.where(
                orm.Experiment.project_id == workspaces.get_project(ws, project, session=session).id
            )
    if state:
        try:
            query = query.where(orm.Experiment.state == ExperimentState(state.upper()))
        except ValueError as exc:
            raise ConfigError(f"unknown experiment state {state!r}") from exc
    if archived is not None:
        query = query.where(orm.Experiment.archived.is_(archived))
    if user is not None:
        query = query.where(orm.Experiment.owner == user)
    if name:
        pattern = "%" + name.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        query = query.where(orm.Experiment.name.ilike(pattern, escape="\\"))
    wanted = [label for label in labels or [] if label]
    if not wanted:
        total = session.scalar(select(func.count()).select_from(query.subquery())) or 0
        page = list(
            session.scalars(
                query.options(
                    defer(orm.Experiment.searcher_state), defer(orm.Experiment.config_yaml)
                )
                .order_by(orm.Experiment.id.desc())
                .offset(offset)
                .limit(limit)
            )
        )
        return views.experiment_summaries(page, session=session), total
    # Labels are a JSON list, which SQLite and PostgreSQL search differently: the rows'
    # ids and labels are read (small), the labels matched here, then one page is loaded.
    rows = session.execute(
        query.with_only_columns(orm.Experiment.id, orm.Experiment.labels).order_by(
            orm.Experiment.id.desc()
        )
    ).all()
    ids = [row.id for row in rows if set(wanted) <= set(row.labels or [])]
    chosen = ids[offset : offset + limit]
    found = {
        e.id: e
        for e in session.scalars(
            select(orm.Experiment)
            .options(defer(orm.Experiment.searcher_state), defer(orm.Experiment.config_yaml))
            .where(orm.Experiment.id.in_(chosen))
        )
    }
    page = [found[i] for i in chosen if i in found]
    return views.experiment_summaries(page, session=session), len(ids)


# -- deleting -------------------------------------------------------------------------------


class CheckpointsNotDeleted(ShipyardError):
    """The checkpoint storage refused to delete files: nothing of the experiment's record
    was deleted, and trying again is safe."""

    status_code = 503
    kind = "ShipyardError"


def delete_experiment(
    db: Database,
    exp_id: int,
    *,
    home: Path,
    visible: Visible,
    grants: Grants,
    username: str,
    address: str = "",
) -> int:
    """Delete an ended experiment: first, in a write transaction, it is checked ended and
    archived, so nothing continues it from then on (`continue` refuses an archived
    experiment) while its files go; its storage is opened, and its checkpoints are marked
    DELETED, so none is registered as a model version meanwhile; then their files (outside
    any transaction: an object store may take seconds), then in one transaction every row
    it owns (trials, runs, metrics, logs, checkpoints, searcher events) with an audit
    record, then the files the master kept for it (its config, its trials' working
    directories and output). Other experiments' rows and files are never touched. If its
    storage fails to delete a file, it stays archived, its record kept (the checkpoints
    whose files are still there COMPLETED again), and deleting it again is safe. Returns
    how many checkpoints were deleted."""
    with db.write() as s:
        exp = get(exp_id, session=s, visible=visible)
        require_edit(exp, grants, username)
        _require_ended(exp)
        exp.archived = True
    with db.read() as s:  # the storage's keys may be opened here: not in a write transaction
        exp = get(exp_id, session=s, visible=visible)
        listed = list(
            s.scalars(
                select(orm.Checkpoint.uuid).where(
                    orm.Checkpoint.experiment_id == exp_id, orm.Checkpoint.state != DELETED
                )
            )
        )
        artifact_trials = artifacts.trials_with_artifacts(exp_id, session=s)
        # Its checkpoints and artifacts must go, so a storage that does not open is an error;
        # without them, only its trials' TensorBoard files may be there: deleted if it opens.
        must_open = bool(listed or artifact_trials)
        storage = checkpoint_storage.storage_of(exp) if must_open else _storage_if_open(exp)
    with db.write() as s:  # marked DELETED: none is registered while its files go
        uuids = checkpoints.claim_for_deletion(listed, session=s)
    failures: dict[str, OSError] = {}
    if uuids:
        assert storage is not None  # opened: it has checkpoints
        failures = checkpoints.delete_claimed(db, storage, uuids, exp_id)
    if failures:
        first = next(iter(failures.items()))
        raise CheckpointsNotDeleted(
            f"experiment {exp_id} was not deleted: its checkpoint storage did not delete "
            f"{len(failures)} of its {len(uuids)} checkpoints ({first[0]} ({first[1]})); "
            "try again"
        )
    if artifact_trials:
        assert storage is not None
        failed = artifacts.delete_files(storage, artifact_trials)
        if failed:
            raise CheckpointsNotDeleted(
                f"experiment {exp_id} was not deleted: its checkpoint storage did not delete "
                f"the artifacts {failed[0]}; try again"
            )
    if storage is not None:
        try:  # its trials' TensorBoard files (core/_tensorboard.py copies them there)
            storage.store.delete(experiment_prefix(exp_id))
        except OSError as exc:
            raise CheckpointsNotDeleted(
                f"experiment {exp_id} was not deleted: its checkpoint storage did not delete "
                f"its TensorBoard files ({exc}); try again"
            ) from exc
        checkpoint_gc.remove_orphans(db, storage, exp_id)
    with db.write() as s:
        exp = get(exp_id, session=s, visible=visible)
        _require_ended(exp)  # not unarchived and continued meanwhile
        trial_ids = list(s.scalars(select(orm.Trial.id).where(orm.Trial.experiment_id == exp_id)))
        audit.record(
            "experiment.delete",
            actor=username,
            target=f"experiment:{exp_id}",
            address=address,
            session=s,
            name=exp.name,
            owner=exp.owner,
            workspace_id=exp.workspace_id,
            trials=len(trial_ids),
            checkpoints=len(uuids),
        )
        _delete_rows(exp_id, trial_ids, session=s)
    _remove_files(home, exp_id, trial_ids)
    return len(uuids)


def _storage_if_open(exp: orm.Experiment) -> checkpoint_storage.CheckpointStorage | None:
    try:
        return checkpoint_storage.storage_of(exp)
    except ShipyardError as exc:  # a storage key's secret is gone: nothing more is deleted
        log.warning("experiment %s: its TensorBoard files are kept: %s", exp.id, exc)
        return None


def _require_ended(exp: orm.Experiment) -> None:
    if not ExperimentState(exp.state).terminal:
        raise Conflict(
            f"experiment {exp.id} is {exp.state}: only an ended experiment can be deleted "
            "(kill it first)"
        )
    require_trials_ended(exp, "deleted")
    session = object_session(exp)
    assert session is not None
    registered = model_refs.of_experiment(exp.id, session=session)
    if registered:
        raise Conflict(
            f"experiment {exp.id} cannot be deleted: {model_refs.describe(registered)} "
            "(a registered checkpoint is kept for as long as its model version exists: "
            "`shipyard model delete` deletes the model)"
        )


def require_trials_ended(exp: orm.Experiment, what: str) -> None:
    """A killed experiment ends at once, its running trials a little later (terminated by
    the orchestrator), and its searcher hears of their exits at its next pass: until both
    have happened, it is neither deleted nor continued (a continued search would otherwise
    be told of exits from before it was continued)."""
    session = object_session(exp)
    assert session is not None
    live = session.scalar(
        select(func.count())
        .select_from(orm.Trial)
        .where(
            orm.Trial.experiment_id == exp.id,
            orm.Trial.state.not_in([st.value for st in TrialState if st.terminal]),
        )
    )
    if live:
        raise Conflict(
            f"experiment {exp.id} has {live} trial(s) still stopping: it can be {what} once "
            "they have (in a few seconds)"
        )
    unheard = session.scalar(
        select(func.count())
        .select_from(orm.SearcherEvent)
        .where(orm.SearcherEvent.experiment_id == exp.id, orm.SearcherEvent.processed.is_(False))
    )
    if unheard:
        raise Conflict(
            f"experiment {exp.id}'s searcher has not yet processed its trials' last reports: "
            f"it can be {what} once it has (in a few seconds)"
        )


def _delete_rows(exp_id: int, trial_ids: list[int], *, session: Session) -> None:
    by_trial = (
        orm.MetricPoint,
        orm.MetricSummary,
        orm.StoredCurve,
        orm.LogCursor,
        orm.TrialRun,
        orm.RunEnvironment,
        orm.Artifact,
    )
    for start in range(0, len(trial_ids), 500):  # bounded IN lists
        chunk = trial_ids[start : start + 500]
        for table in by_trial:
            session.execute(delete(table).where(table.trial_id.in_(chunk)))
    for owned in (orm.LogLine, orm.SearcherEvent, orm.Checkpoint, orm.Trial):
        session.execute(delete(owned).where(owned.experiment_id == exp_id))
    session.execute(delete(orm.Experiment).where(orm.Experiment.id == exp_id))


def _remove_files(home: Path, exp_id: int, trial_ids: list[int]) -> None:
    """The master's own files of the experiment, each path built from its ids only."""
    shutil.rmtree(home / "experiments" / str(exp_id), ignore_errors=True)
    for trial_id in trial_ids:
        shutil.rmtree(home / "trials" / str(trial_id), ignore_errors=True)
        for path in (home / "logs").glob(f"trial-{trial_id}-run-*.log"):
            path.unlink(missing_ok=True)
