"""Deletes the checkpoints an experiment's retention policy no longer keeps."""

from __future__ import annotations

import logging
from datetime import datetime

from sqlalchemy import select

from shipyard.server import orm
from shipyard.server.db import Database
from shipyard.server.services.checkpoints import DELETED, select_for_deletion
from shipyard.storage import storage_from_dict

log = logging.getLogger(__name__)


def collect(db: Database, experiment_id: int, trial_id: int | None = None) -> list[str]:
    """Apply retention to one trial's checkpoints, or to the whole experiment's."""
    with db.read() as s:
        exp = s.get(orm.Experiment, experiment_id)
        doomed = [c.uuid for c in select_for_deletion(exp, trial_id=trial_id, session=s)]
        base = exp.checkpoint_base
    if not doomed:
        return []
    storage = storage_from_dict({"type": "shared_fs", "base_path": base})
    for uuid in doomed:
        try:
            storage.delete(uuid)
        except OSError:
            log.exception("could not delete checkpoint %s", uuid)
    with db.write() as s:
        for uuid in doomed:
            s.get(orm.Checkpoint, uuid).state = DELETED
    return doomed


def experiments_ended_since(db: Database, since: datetime) -> list[int]:
    with db.read() as s:
        return list(
            s.scalars(
                select(orm.Experiment.id).where(
                    orm.Experiment.ended_at.is_not(None), orm.Experiment.ended_at >= since
                )
            )
        )
