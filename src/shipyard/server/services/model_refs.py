"""Which checkpoints model versions point at. A registered checkpoint is in use for as long
as its version exists: retention keeps it, and deleting it (or its experiment) is refused."""

from __future__ import annotations

from collections.abc import Collection

from sqlalchemy import select
from sqlalchemy.orm import Session

from shipyard.server import orm


def registered(uuids: Collection[str], *, session: Session) -> dict[str, list[str]]:
    """The checkpoints among `uuids` that model versions point at, each with the versions
    that do, as people name them: "resnet/3 (workspace 'vision')"."""
    found: dict[str, list[str]] = {}
    chosen = list(uuids)
    for start in range(0, len(chosen), 500):  # bounded IN lists
        rows = session.execute(
            select(
                orm.ModelVersion.checkpoint_uuid,
                orm.Model.name,
                orm.ModelVersion.version,
                orm.Workspace.name,
            )
            .join(orm.Model, orm.Model.id == orm.ModelVersion.model_id)
            .join(orm.Workspace, orm.Workspace.id == orm.Model.workspace_id)
            .where(orm.ModelVersion.checkpoint_uuid.in_(chosen[start : start + 500]))
            .order_by(orm.Model.name, orm.ModelVersion.version)
        )
        for uuid, model, version, workspace in rows:
            found.setdefault(uuid, []).append(f"{model}/{version} (workspace {workspace!r})")
    return found


def of_experiment(experiment_id: int, *, session: Session) -> dict[str, list[str]]:
    """The experiment's checkpoints that model versions point at, as `registered` says."""
    uuids = session.scalars(
        select(orm.ModelVersion.checkpoint_uuid)
        .join(orm.Checkpoint, orm.Checkpoint.uuid == orm.ModelVersion.checkpoint_uuid)
        .where(orm.Checkpoint.experiment_id == experiment_id)
    )
    return registered(set(uuids), session=session)


def describe(found: dict[str, list[str]], limit: int = 3) -> str:
    """ "checkpoint abc… is model version resnet/3 (workspace 'x')" for a message, the first
    `limit` checkpoints named and the others counted."""
    parts = [
        f"checkpoint {uuid} is model version {', '.join(versions)}"
        for uuid, versions in sorted(found.items())[:limit]
    ]
    more = len(found) - limit
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")
