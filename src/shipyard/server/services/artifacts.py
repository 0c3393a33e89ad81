"""Artifacts: files a trial keeps beside its metrics (shipyard.core.artifacts writes each to
its experiment's checkpoint storage, then asks the master to record it). Recorded here
(one per trial, name and step: a rerun's replaces the earlier one), listed, opened for
reading, and removed with their experiment. The rules of names, kinds and media types are
shipyard.common.artifact_rules, which the trial side checks too."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, BinaryIO, NamedTuple

from sqlalchemy import select
from sqlalchemy.orm import Session

from shipyard.common import artifact_rules as rules
from shipyard.common.api_artifacts import ArtifactInfo
from shipyard.common.errors import InvalidRequest, NotFound, ShipyardError
from shipyard.server import orm
from shipyard.server.db import Database
from shipyard.server.orm import utcnow
from shipyard.server.services import checkpoint_storage, trials
from shipyard.server.services.trial_reports import current_run
from shipyard.server.services.workspaces import Visible
from shipyard.storage import CheckpointStorage

_SHA256 = frozenset("0123456789abcdef")


class StorageUnavailable(ShipyardError):
    """The checkpoint storage did not answer (or refused): trying again may work."""

    status_code = 503
    kind = "ShipyardError"


class Report(NamedTuple):
    """What a trial says it wrote, checked."""

    name: str
    steps_completed: int | None
    kind: str
    media_type: str
    size: int
    sha256: str
    storage_path: str


@dataclass(frozen=True)
class Readable:
    """An artifact the caller may read, and the storage that holds it."""

    name: str
    media_type: str
    sha256: str
    storage_path: str
    storage: CheckpointStorage


def check_report(trial_id: int, body: dict[str, Any], *, max_bytes: int) -> Report:
    """The fields of a trial's POST, each checked, naming the one at fault. storage_path
    must be the key the name and step give (the trial cannot point the master at another
    file of the storage, e.g. another experiment's checkpoint)."""
    name = body.get("name")
    steps = body.get("steps_completed")
    kind = body.get("kind")
    media_type = body.get("media_type")
    for refusal in (
        rules.name_refusal(name),
        rules.steps_refusal(steps),
        rules.media_type_refusal(kind, media_type),
    ):
        if refusal is not None:
            raise InvalidRequest(refusal)
    size = body.get("size")
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise InvalidRequest(f"size must be a number of bytes (an int >= 0), got {size!r:.40}")
    if size > max_bytes:
        raise InvalidRequest(
            f"artifact {name!r} is {size} bytes, over the master's limit of {max_bytes} "
            "(SHIPYARD_ARTIFACT_MAX_BYTES)"
        )
    sha256 = body.get("sha256")
    if not isinstance(sha256, str) or len(sha256) != 64 or not set(sha256) <= _SHA256:
        raise InvalidRequest(f"sha256 must be 64 lower-case hex digits, got {sha256!r:.80}")
    assert isinstance(name, str) and isinstance(kind, str) and isinstance(media_type, str)
    key = rules.storage_key(trial_id, steps, name)
    sent = body.get("storage_path", key)
    if sent != key:
        raise InvalidRequest(
            f"storage_path must be {key!r} (from the name and step), got {sent!r:.300}"
        )
    return Report(name, steps, kind, media_type, size, sha256, key)


def keep(db: Database, trial_id: int, run_id: object, report: Report) -> ArtifactInfo:
    """Record what the trial's current run wrote. The file must be in the storage before
    it is listed: it is looked for outside any transaction (the storage may be an object
    store, seconds away), between two checks that the run is the trial's current one."""
    with db.read() as s:
        trial = trials.get(trial_id, session=s)
        current_run(trial, run_id)
        storage = checkpoint_storage.storage_of(s.get_one(orm.Experiment, trial.experiment_id))
    try:
        found = storage.store.exists(report.storage_path)
    except OSError as exc:
        raise StorageUnavailable(
            f"cannot read the checkpoint storage {storage.store}: {exc}"
        ) from None
    if not found:
        raise InvalidRequest(
            f"artifact {report.name!r}: no file at {report.storage_path} in {storage.store}; "
            "write the file first"
        )
    with db.write() as s:
        trial = trials.get(trial_id, session=s)
        return record(trial, current_run(trial, run_id), report, session=s)


def record(trial: orm.Trial, run_id: int, report: Report, *, session: Session) -> ArtifactInfo:
    """Keep an artifact; one already there for its trial, name and step is replaced."""
    row = session.scalars(
        select(orm.Artifact).where(
            orm.Artifact.trial_id == trial.id,
            orm.Artifact.name == report.name,
            orm.Artifact.steps_completed.is_(None)
            if report.steps_completed is None
            else orm.Artifact.steps_completed == report.steps_completed,
        )
    ).first()
    if row is None:
        row = orm.Artifact(trial_id=trial.id, name=report.name)
        session.add(row)
    row.experiment_id = trial.experiment_id
    row.run_id = run_id
    row.steps_completed = report.steps_completed
    row.kind = report.kind
    row.media_type = report.media_type
    row.size = report.size
    row.sha256 = report.sha256
    row.storage_path = report.storage_path
    row.created_at = utcnow()
    session.flush()
    return info(row)


def list_for_trial(trial_id: int, *, visible: Visible, session: Session) -> list[ArtifactInfo]:
    """The trial's artifacts: those of no step first, then by step and name."""
    trial = trials.get(trial_id, session=session, visible=visible)
    a = orm.Artifact
    rows = session.scalars(
        select(a)
        .where(a.trial_id == trial.id)
        .order_by(a.steps_completed.is_not(None), a.steps_completed, a.name, a.id)
    )
    return [info(row) for row in rows]


def info(row: orm.Artifact) -> ArtifactInfo:
    return ArtifactInfo(
        id=row.id,
        experiment_id=row.experiment_id,
        trial_id=row.trial_id,
        run_id=row.run_id,
        name=row.name,
        steps_completed=row.steps_completed,
        kind=row.kind,
        media_type=row.media_type,
        size=row.size,
        sha256=row.sha256,
        storage_path=row.storage_path,
        created_at=row.created_at,
        url=f"/api/v1/trials/{row.trial_id}/artifacts/{row.id}/content",
    )


def for_reading(trial_id: int, artifact_id: int, *, visible: Visible, session: Session) -> Readable:
    """An artifact of a trial the caller sees (NotFound otherwise) and its storage (opened
    here: call it in a read transaction, not a write one)."""
    trial = trials.get(trial_id, session=session, visible=visible)
    row = session.get(orm.Artifact, artifact_id)
    if row is None or row.trial_id != trial.id:
        raise NotFound(f"trial {trial_id} has no artifact {artifact_id}")
    exp = session.get_one(orm.Experiment, trial.experiment_id)
    return Readable(
        row.name, row.media_type, row.sha256, row.storage_path, checkpoint_storage.storage_of(exp)
    )


def open_content(artifact: Readable) -> BinaryIO:
    """The artifact's bytes, as a stream the caller closes."""
    try:
        return artifact.storage.store.get(artifact.storage_path)
    except FileNotFoundError:
        raise NotFound(
            f"artifact {artifact.name!r}: its file {artifact.storage_path} is gone from "
            f"{artifact.storage.store}"
        ) from None
    except OSError as exc:
        raise StorageUnavailable(f"cannot read artifact {artifact.name!r}: {exc}") from None


def shown_inline(media_type: str) -> bool:
    """Whether a browser may show the content in place: images and plain texts only, never
    HTML, SVG or anything else that can run script (those are downloaded)."""
    return media_type in rules.INLINE_TYPES


def trials_with_artifacts(exp_id: int, *, session: Session) -> list[int]:
    return list(
        session.scalars(
            select(orm.Artifact.trial_id).where(orm.Artifact.experiment_id == exp_id).distinct()
        )
    )


def delete_files(storage: CheckpointStorage, trial_ids: list[int]) -> list[str]:
    """Remove every artifact file of these trials (those no row lists too: a run that died
    between writing and recording); returns what could not be removed."""
    failed = []
    for trial_id in trial_ids:
        prefix = rules.trial_prefix(trial_id)
        try:
            storage.store.delete(prefix)
        except OSError as exc:
            failed.append(f"{prefix} ({exc})")
    return failed
