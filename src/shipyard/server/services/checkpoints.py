"""Checkpoint records and retention (Determined's save_trial_latest / save_trial_best /
save_experiment_best). Files are written by the trial; the master records and deletes."""

from __future__ import annotations

import logging
from collections.abc import Callable

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from shipyard.common import api
from shipyard.common.errors import Conflict, InvalidRequest, NotFound
from shipyard.common.states import TrialState
from shipyard.server import orm
from shipyard.server.auth.permissions import Grants
from shipyard.server.db import Database
from shipyard.server.services import (
    audit,
    checkpoint_storage,
    experiments,
    metrics,
    model_refs,
    trials,
    views,
)
from shipyard.server.services.experiment_config import config_of
from shipyard.server.services.workspaces import Visible, get_visible
from shipyard.storage import CheckpointStorage

log = logging.getLogger(__name__)

COMPLETED, DELETED = "COMPLETED", "DELETED"


def register(trial: orm.Trial, body: dict, *, base_path: str, session: Session) -> orm.Checkpoint:
    uuid = body.get("uuid")
    if not isinstance(uuid, str) or not uuid or "/" in uuid or uuid.startswith("."):
        raise InvalidRequest(f"checkpoint uuid must be a plain name, got {uuid!r}")
    resources = body.get("resources") or {}
    if not isinstance(resources, dict) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in resources.values()
    ):
        raise InvalidRequest("checkpoint resources must be an object of path -> bytes")
    steps = body.get("steps_completed") or 0
    if not isinstance(steps, int) or isinstance(steps, bool) or not 0 <= steps < 2**63:
        raise InvalidRequest(f"steps_completed must be a non-negative integer, got {steps!r}")
    metadata = body.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise InvalidRequest("checkpoint metadata must be an object")
    existing = session.get(orm.Checkpoint, uuid)
    if existing is not None:
        if existing.trial_id != trial.id:
            raise Conflict(f"checkpoint {uuid} belongs to trial {existing.trial_id}")
        return existing  # a retried report: keep the first record
    ckpt = orm.Checkpoint(
        uuid=uuid,
        experiment_id=trial.experiment_id,
        trial_id=trial.id,
        workspace_id=trial.workspace_id,
        run_id=trial.run_id,
        steps_completed=steps,
        meta=metadata,
        resources=resources,
        size=sum(resources.values()),
        storage_path=checkpoint_storage.location(base_path, uuid),
        state=COMPLETED,
    )
    session.add(ckpt)
    trial.latest_checkpoint = uuid
    return ckpt


def get(uuid: str, *, session: Session, visible: Visible = None) -> orm.Checkpoint:
    """visible: the workspaces the caller sees (None: all); one in another is not found."""
    ckpt = get_visible(orm.Checkpoint, uuid, visible, session)
    if ckpt is None:
        raise NotFound(f"checkpoint {uuid} does not exist")
    return ckpt


def storage_of(ckpt: orm.Checkpoint, *, session: Session) -> CheckpointStorage:
    """The storage that holds the checkpoint's files: its experiment's."""
    return checkpoint_storage.storage_of(session.get_one(orm.Experiment, ckpt.experiment_id))


def info(ckpt: orm.Checkpoint, *, session: Session) -> api.CheckpointInfo:
    exp = session.get(orm.Experiment, ckpt.experiment_id)
    metric = config_of(exp).searcher.metric if exp else None
    value = (
        metrics.value_at(ckpt.trial_id, metric, ckpt.steps_completed, session=session)
        if metric
        else None
    )
    return views.checkpoint_info(ckpt, value)


def list_for_experiment(exp_id: int, *, session: Session) -> list[api.CheckpointInfo]:
    c = orm.Checkpoint
    return _listed(c.experiment_id == exp_id, (c.trial_id, c.steps_completed), session)


def list_for_trial(trial_id: int, *, session: Session) -> list[api.CheckpointInfo]:
    """The trial's checkpoints by step (a rerun's checkpoint of the same step after it)."""
    c = orm.Checkpoint
    return _listed(c.trial_id == trial_id, (c.steps_completed, c.created_at), session)


def _listed(which, order, session: Session) -> list[api.CheckpointInfo]:
    """The checkpoints `which` selects that have not been deleted, in `order`."""
    rows = session.scalars(
        select(orm.Checkpoint).where(which, orm.Checkpoint.state == COMPLETED).order_by(*order)
    )
    return [info(c, session=session) for c in rows]


def select_for_deletion(
    exp: orm.Experiment, *, trial_id: int | None = None, session: Session
) -> list[orm.Checkpoint]:
    """Checkpoints the retention policy no longer keeps, among one trial's (when it ends)
    or the whole experiment's (when it ends). A trial's own best `save_experiment_best`
    are kept until the experiment ends, because the experiment's best are among them.
    The latest checkpoint of a trial that may still run is always kept: it resumes from it."""
    cfg = config_of(exp)
    retention = cfg.retention()
    keep_latest = retention.save_trial_latest
    keep_best = retention.save_trial_best
    keep_exp_best = retention.save_experiment_best
    metric, smaller = cfg.searcher.metric, cfg.searcher.smaller_is_better

    query = select(orm.Checkpoint).where(
        orm.Checkpoint.experiment_id == exp.id, orm.Checkpoint.state == COMPLETED
    )
    if trial_id is not None:
        query = query.where(orm.Checkpoint.trial_id == trial_id)
    ckpts = list(session.scalars(query))
    scores = {
        c.uuid: metrics.value_at(c.trial_id, metric, c.steps_completed, session=session)
        if metric
        else None
        for c in ckpts
    }

    def best_first(items: list[orm.Checkpoint]) -> list[orm.Checkpoint]:
        scored = [(score, c) for c in items if (score := scores[c.uuid]) is not None]
        scored.sort(key=lambda pair: pair[0] if smaller else -pair[0])
        return [c for _score, c in scored]

    keep: set[str] = {c.uuid for c in best_first(ckpts)[:keep_exp_best]}
    by_trial: dict[int, list[orm.Checkpoint]] = {}
    for c in sorted(ckpts, key=lambda c: (c.created_at, c.steps_completed)):
        by_trial.setdefault(c.trial_id, []).append(c)
    for own in by_trial.values():
        if keep_latest:
            keep.update(c.uuid for c in own[-keep_latest:])
        keep.update(c.uuid for c in best_first(own)[:keep_best])
    # In use: the checkpoint any live trial of the experiment resumes from — its own, or,
    # for a PBT child that has not saved one yet, its parent's.
    keep.update(
        session.scalars(
            select(orm.Trial.latest_checkpoint).where(
                orm.Trial.experiment_id == exp.id,
                orm.Trial.state.not_in([st.value for st in TrialState if st.terminal]),
                orm.Trial.latest_checkpoint.is_not(None),
            )
        )
    )
    # In use: the checkpoints model versions point at (a registered one is never deleted).
    keep.update(model_refs.registered([c.uuid for c in ckpts], session=session))
    return [c for c in ckpts if c.uuid not in keep]


BEST, LATEST = "best", "latest"


def ranked(
    *,
    experiment_id: int | None,
    trial_id: int | None,
    order: str,
    limit: int,
    visible: Visible,
    session: Session,
) -> list[api.CheckpointInfo]:
    """An experiment's or a trial's checkpoints (not deleted ones), the best first (by its
    searcher's metric and smaller_is_better; those without a value of it last, the latest
    first among them) or the latest first (by step, then by time)."""
    if trial_id is not None and experiment_id is None:
        trial = trials.get(trial_id, session=session, visible=visible)
        exp = session.get_one(orm.Experiment, trial.experiment_id)
        found = list_for_trial(trial_id, session=session)
    elif experiment_id is not None and trial_id is None:
        exp = experiments.get(experiment_id, session=session, visible=visible)
        found = list_for_experiment(exp.id, session=session)
    else:
        raise InvalidRequest("give exactly one of experiment_id and trial_id")
    latest_first = sorted(found, key=lambda c: (c.steps_completed, c.created_at), reverse=True)
    if order == LATEST:
        return latest_first[:limit]
    searcher = config_of(exp).searcher
    if not searcher.metric:
        raise InvalidRequest(
            f"experiment {exp.id}'s searcher has no single metric to rank checkpoints by: "
            "ask for the latest instead"
        )
    sign = 1 if searcher.smaller_is_better else -1
    scored = [c for c in latest_first if c.validation is not None]
    scored.sort(key=lambda c: sign * c.validation)  # type: ignore[operator]  # stable sort
    return (scored + [c for c in latest_first if c.validation is None])[:limit]


def of_experiment(uuid: str, experiment_id: int, *, session: Session) -> orm.Checkpoint:
    """Checkpoint `uuid` if it is one of the experiment's (what a trial of it may touch)."""
    ckpt = session.get(orm.Checkpoint, uuid)
    if ckpt is None or ckpt.experiment_id != experiment_id:
        raise NotFound(f"checkpoint {uuid} does not exist in experiment {experiment_id}")
    return ckpt


def check_deletable(ckpt: orm.Checkpoint, *, session: Session) -> None:
    """A checkpoint a user may delete: not deleted already, not one a model version points
    at (delete the model first), and not the one a trial that may still run resumes from
    (its own latest, or a PBT child's parent's): that trial would restart from nothing, or
    fail. Kill the trial, or wait for it to end, then delete it."""
    if ckpt.state != COMPLETED:
        raise NotFound(f"checkpoint {ckpt.uuid} has already been deleted")
    registered = model_refs.registered([ckpt.uuid], session=session)
    if registered:
        raise Conflict(
            f"{model_refs.describe(registered)}: a registered checkpoint is kept for as long "
            "as its model version exists (`shipyard model delete` deletes the model)"
        )
    users = list(
        session.scalars(
            select(orm.Trial.id).where(
                orm.Trial.latest_checkpoint == ckpt.uuid,
                orm.Trial.state.not_in([st.value for st in TrialState if st.terminal]),
            )
        )
    )
    if users:
        which = ", ".join(str(t) for t in sorted(users))
        raise Conflict(
            f"checkpoint {ckpt.uuid} is the one trial {which} resumes from, and it may still "
            "run: kill the trial or wait for it to end, then delete the checkpoint"
        )


def delete(
    db: Database,
    uuid: str,
    find: Callable[[Session], orm.Checkpoint],
    *,
    actor: str,
    address: str = "",
    **detail: object,
) -> None:
    """Delete a checkpoint a user or a trial asked to delete (`find` returns it from a
    session, checking the caller may: NotFound or Forbidden otherwise). In one write
    transaction it is checked deletable and marked DELETED (its trials' latest_checkpoint
    moved off it), so nothing resumes from it or downloads it while its files go; then its
    files are deleted, with no transaction open (an object store may take seconds). If the
    storage fails, it is COMPLETED again (409: try again). A deletion is audited."""
    with db.read() as s:  # a storage's keys from secrets are opened outside a write
        storage = storage_of(find(s), session=s)
    with db.write() as s:
        ckpt = find(s)
        check_deletable(ckpt, session=s)
        moved = mark_deleted(uuid, session=s)
        experiment_id, trial_id = ckpt.experiment_id, ckpt.trial_id
    try:
        delete_files(uuid, storage)
    except Conflict:
        with db.write() as s:
            _restore(uuid, moved, session=s)
        raise
    with db.write() as s:
        audit.record(
            "checkpoint.delete",
            actor=actor,
            target=f"checkpoint:{uuid}",
            address=address,
            session=s,
            experiment=experiment_id,
            trial=trial_id,
            **detail,
        )


def delete_as_user(
    db: Database, uuid: str, *, visible: Visible, grants: Grants, username: str, address: str
) -> None:
    """`checkpoint delete`: as `delete`, by its experiment's owner (an editor) or an admin
    of its workspace (Forbidden otherwise; NotFound for one the user does not see)."""

    def find(session: Session) -> orm.Checkpoint:
        ckpt = get(uuid, session=session, visible=visible)
        exp = experiments.get(ckpt.experiment_id, session=session)
        experiments.require_edit(exp, grants, username)
        return ckpt

    delete(db, uuid, find, actor=username, address=address)


def delete_files(uuid: str, storage: CheckpointStorage) -> None:
    """Remove a checkpoint's files; call it with no transaction open (an object store may
    take seconds). A storage that fails is a Conflict: the checkpoint stays recorded, and
    deleting it again may succeed."""
    try:
        storage.delete(uuid)
    except OSError as exc:
        log.warning("could not delete checkpoint %s: %s", uuid, exc)
        raise Conflict(
            f"could not delete checkpoint {uuid}'s files from its storage ({exc}); "
            "it is still recorded: try again"
        ) from None


def mark_deleted(uuid: str, *, session: Session) -> dict[int, str | None]:
    """Record that the checkpoint's files are gone. A trial whose latest checkpoint it was
    points at its latest one left (or none), so nothing offers it for restore again.
    Returns those trials' ids and what they point at now."""
    ckpt = session.get_one(orm.Checkpoint, uuid)
    ckpt.state = DELETED
    session.flush()
    moved: dict[int, str | None] = {}
    for trial in session.scalars(select(orm.Trial).where(orm.Trial.latest_checkpoint == uuid)):
        trial.latest_checkpoint = moved[trial.id] = session.scalar(
            select(orm.Checkpoint.uuid)
            .where(orm.Checkpoint.trial_id == trial.id, orm.Checkpoint.state == COMPLETED)
            .order_by(orm.Checkpoint.steps_completed.desc(), orm.Checkpoint.created_at.desc())
            .limit(1)
        )
    return moved


def claim_for_deletion(uuids: list[str], *, session: Session) -> list[str]:
    """Mark DELETED, before their files go, those of these COMPLETED checkpoints that no
    model version points at; returns them. Registering takes only a COMPLETED checkpoint,
    and both happen in serialized write transactions, so none of these can become a
    model version while its files are being deleted. (For retention and a whole
    experiment's deletion, where no trial resumes from them: trials' latest_checkpoint
    stays; `delete` moves it.)"""
    spared = model_refs.registered(uuids, session=session)
    claimed: list[str] = []
    for start in range(0, len(uuids), 500):  # bounded IN lists
        chosen = [u for u in uuids[start : start + 500] if u not in spared]
        claimed += session.scalars(
            update(orm.Checkpoint)
            .where(orm.Checkpoint.uuid.in_(chosen), orm.Checkpoint.state == COMPLETED)
            .values(state=DELETED)
            .returning(orm.Checkpoint.uuid)
        )
    return claimed


def delete_claimed(
    db: Database, storage: CheckpointStorage, uuids: list[str], experiment_id: int
) -> dict[str, OSError]:
    """Delete the files of checkpoints claim_for_deletion marked, with no transaction open
    (an object store may take seconds). Those whose files the storage kept, or that were
    not reached, are COMPLETED again, so a later pass or a second deletion tries again.
    Returns the storage's failures by checkpoint."""
    gone: set[str] = set()
    failures: dict[str, OSError] = {}
    try:
        for uuid in uuids:
            try:
                storage.delete(uuid)
            except OSError as exc:
                log.warning(
                    "experiment %s: could not delete checkpoint %s: %s", experiment_id, uuid, exc
                )
                failures[uuid] = exc
            else:
                gone.add(uuid)
    finally:
        kept = [uuid for uuid in uuids if uuid not in gone]
        if kept:
            with db.write() as s:
                for start in range(0, len(kept), 500):
                    s.execute(
                        update(orm.Checkpoint)
                        .where(orm.Checkpoint.uuid.in_(kept[start : start + 500]))
                        .values(state=COMPLETED)
                    )
    return failures


def _restore(uuid: str, moved: dict[int, str | None], *, session: Session) -> None:
    """Undo mark_deleted after the storage kept the files: the checkpoint is COMPLETED
    again, and the trials moved off it point at it again (unless they moved on since)."""
    ckpt = session.get(orm.Checkpoint, uuid)
    if ckpt is None:  # its experiment was deleted meanwhile
        return
    ckpt.state = COMPLETED
    for trial_id, now in moved.items():
        trial = session.get(orm.Trial, trial_id)
        if trial is not None and trial.latest_checkpoint == now:
            trial.latest_checkpoint = uuid
