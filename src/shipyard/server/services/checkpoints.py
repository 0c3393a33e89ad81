"""Checkpoint records and retention (Determined's save_trial_latest / save_trial_best /
save_experiment_best). Files are written by the trial; the master records and deletes."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from shipyard.common import api
from shipyard.common.errors import Conflict, InvalidRequest, NotFound
from shipyard.common.states import TrialState
from shipyard.server import orm
from shipyard.server.services import checkpoint_storage, metrics, views
from shipyard.server.services.experiment_config import config_of
from shipyard.server.services.workspaces import Visible, get_visible
from shipyard.storage import CheckpointStorage

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
    return [c for c in ckpts if c.uuid not in keep]
