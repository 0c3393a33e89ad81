"""Checkpoints: list, describe, and download into a local directory."""

from __future__ import annotations

import tempfile
from pathlib import Path
from urllib.parse import quote

from shipyard.client.session import Session
from shipyard.client.unpack import safe_extract_tar
from shipyard.common.api import CheckpointInfo
from shipyard.common.errors import NotFound


def list_checkpoints(session: Session, experiment_id: int) -> list[CheckpointInfo]:
    items = session.get(f"/experiments/{experiment_id}/checkpoints")
    return [CheckpointInfo.model_validate(item) for item in items]


def list_trial_checkpoints(session: Session, trial_id: int) -> list[CheckpointInfo]:
    """The trial's checkpoints by step."""
    items = session.get(f"/trials/{trial_id}/checkpoints")
    return [CheckpointInfo.model_validate(item) for item in items]


def _path(uuid: str) -> str:
    # A checkpoint id is one path segment; the master refuses any with "/" when stored.
    if not uuid or "/" in uuid:
        raise NotFound(f"checkpoint {uuid!r} does not exist")
    return f"/checkpoints/{quote(uuid, safe='')}"


def get_checkpoint(session: Session, uuid: str) -> CheckpointInfo:
    return CheckpointInfo.model_validate(session.get(_path(uuid)))


def download_checkpoint(session: Session, uuid: str, dest: str | Path) -> list[str]:
    """Stream the checkpoint's tar to a temporary file, then unpack it into dest once every
    member has been checked (a refused archive leaves dest untouched). Returns the files."""
    dest = Path(dest)
    with tempfile.TemporaryFile(suffix=".tar") as spool:
        with session.stream(f"{_path(uuid)}/download") as response:
            for chunk in response.iter_bytes(1 << 20):
                spool.write(chunk)
        spool.flush()
        spool.seek(0)
        return safe_extract_tar(spool, dest)
