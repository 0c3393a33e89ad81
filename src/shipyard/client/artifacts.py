"""A trial's artifacts (images, texts, tables, files): list, and download one."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from shipyard.client.session import Session
from shipyard.common.api_artifacts import ArtifactInfo
from shipyard.common.errors import NotFound, ShipyardError


def list_artifacts(session: Session, trial_id: int) -> list[ArtifactInfo]:
    """The trial's artifacts: those of no step first, then by step and name."""
    return [ArtifactInfo.model_validate(a) for a in session.get(f"/trials/{trial_id}/artifacts")]


def get_artifact(session: Session, trial_id: int, artifact_id: int) -> ArtifactInfo:
    for artifact in list_artifacts(session, trial_id):
        if artifact.id == artifact_id:
            return artifact
    raise NotFound(f"trial {trial_id} has no artifact {artifact_id}")


def download_artifact(
    session: Session, trial_id: int, artifact_id: int, dest: str | Path | None = None
) -> Path:
    """The artifact's content into ``dest``: a file path, or a directory (the artifact's
    name in it); default, its name in the current directory. Checked against its sha256
    before it replaces anything; returns the file written."""
    artifact = get_artifact(session, trial_id, artifact_id)
    target = Path(dest) if dest is not None else Path(artifact.name)
    if target.is_dir():
        target = target / artifact.name
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    path = f"/trials/{trial_id}/artifacts/{artifact_id}/content"
    handle, scratch = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(handle, "wb") as out, session.stream(path) as response:
            for chunk in response.iter_bytes(1 << 20):
                digest.update(chunk)
                out.write(chunk)
        if digest.hexdigest() != artifact.sha256:
            raise ShipyardError(
                f"artifact {artifact_id} of trial {trial_id} arrived damaged: its sha256 is "
                f"{digest.hexdigest()}, not {artifact.sha256} (replaced by a rerun meanwhile? "
                "try again)"
            )
        os.replace(scratch, target)
    except BaseException:
        Path(scratch).unlink(missing_ok=True)
        raise
    return target
