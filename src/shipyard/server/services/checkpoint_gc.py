"""Deletes the checkpoints an experiment's retention policy no longer keeps, and the
unfinished ones its trials left behind when they died while writing them."""

from __future__ import annotations

import logging
from datetime import datetime

from sqlalchemy import select

from shipyard.common.errors import ShipyardError
from shipyard.server import orm
from shipyard.server.db import Database
from shipyard.server.services import checkpoint_storage
from shipyard.server.services.checkpoints import (
    claim_for_deletion,
    delete_claimed,
    select_for_deletion,
)
from shipyard.server.services.lifecycle import HOLDING
from shipyard.storage import CheckpointStorage

log = logging.getLogger(__name__)


def collect(db: Database, experiment_id: int, trial_id: int | None = None) -> list[str]:
    """Apply retention to one trial's checkpoints, or to the whole experiment's."""
    with db.read() as s:
        exp = s.get(orm.Experiment, experiment_id)
        if exp is None:  # deleted since it ended: its checkpoints went with it
            return []
        doomed = [c.uuid for c in select_for_deletion(exp, trial_id=trial_id, session=s)]
        try:
            storage = checkpoint_storage.storage_of(exp)
        except ShipyardError as exc:  # a storage key's secret is gone: the others go on
            log.warning("experiment %s: retention skipped: %s", experiment_id, exc)
            return []
    remove_orphans(db, storage, experiment_id)
    if not doomed:
        return []
    # Marked DELETED first, with the check that no model version points at them (one
    # registered since they were selected is spared): from then on none can be registered,
    # so none loses its files to this pass. What the storage keeps is COMPLETED again.
    with db.write() as s:
        claimed = claim_for_deletion(doomed, session=s)
    failures = delete_claimed(db, storage, claimed, experiment_id)  # tried again next pass
    return [uuid for uuid in claimed if uuid not in failures]


def remove_orphans(db: Database, storage: CheckpointStorage, experiment_id: int) -> list[str]:
    """Delete the checkpoints this experiment's trials began and never registered: their
    run died while writing (or before the master answered). A run still going may be
    writing its mark's checkpoint right now, so only ended runs' are touched."""
    try:
        marks = storage.writing()
    except OSError as exc:
        log.warning("could not list unfinished checkpoints in %s: %s", storage, exc)
        return []
    if not marks:
        return []
    with db.read() as s:
        registered = set(
            s.scalars(select(orm.Checkpoint.uuid).where(orm.Checkpoint.uuid.in_(list(marks))))
        )
        trial_ids = {m.get("trial_id") for m in marks.values()}
        query = select(orm.Trial).where(orm.Trial.id.in_(trial_ids))
        trials: dict[object, orm.Trial] = {t.id: t for t in s.scalars(query)}  # by a mark's id
    removed = []
    for uuid, owner in marks.items():
        trial = trials.get(owner.get("trial_id"))
        if trial is None or trial.experiment_id != experiment_id:
            continue  # another experiment's, in a shared storage
        try:
            if uuid in registered:
                storage.clear_writing(uuid)  # killed between registering and clearing
            elif trial.state in HOLDING and trial.run_id == owner.get("run_id"):
                continue
            else:
                storage.delete(uuid)
                removed.append(uuid)
        except OSError as exc:  # its mark stays: tried again at the next pass
            log.warning("could not remove unfinished checkpoint %s: %s", uuid, exc)
    if removed:
        log.info("removed %d unfinished checkpoints of experiment %s", len(removed), experiment_id)
    return removed


def experiments_ended_since(db: Database, since: datetime) -> list[int]:
    with db.read() as s:
        return list(
            s.scalars(
                select(orm.Experiment.id).where(
                    orm.Experiment.ended_at.is_not(None), orm.Experiment.ended_at >= since
                )
            )
        )
