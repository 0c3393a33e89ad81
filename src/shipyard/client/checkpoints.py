"""Checkpoints: list, describe, and download into a local directory."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from urllib.parse import quote

import httpx

from shipyard.client.session import Session
from shipyard.common.api import CheckpointInfo, CheckpointLinks
from shipyard.common.archives import escapes, safe_extract_tar
from shipyard.common.errors import InvalidRequest, NotFound, ShipyardError


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
    """The checkpoint's files into dest; returns them. From an object store, straight from
    it through the short-lived URLs the master signs (the caller needs no credentials of
    the store); else through the master, as a tar."""
    links = CheckpointLinks.model_validate(session.get(f"{_path(uuid)}/links"))
    if links.direct:
        return fetch_links(links, Path(dest))
    return _download_tar(session, uuid, Path(dest))


def fetch_links(links: CheckpointLinks, dest: Path) -> list[str]:
    """Each file GET from its URL into a scratch directory beside dest, then moved into
    dest: a failed download leaves dest as it was."""
    for link in links.files:
        if not link.path or escapes(link.path):
            raise InvalidRequest(f"checkpoint {links.uuid}: refusing file path {link.path!r}")
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest, prefix=".download-") as scratch:
        with httpx.Client(timeout=httpx.Timeout(60, connect=10)) as plain:  # no token sent
            for link in links.files:
                target = Path(scratch, link.path)
                target.parent.mkdir(parents=True, exist_ok=True)
                with plain.stream("GET", link.url) as response, open(target, "wb") as out:
                    if response.status_code != 200:
                        raise ShipyardError(
                            f"checkpoint {links.uuid}: the store answered "
                            f"{response.status_code} for {link.path}"
                        )
                    for chunk in response.iter_bytes(1 << 20):
                        out.write(chunk)
        for link in links.files:
            target = dest / link.path
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(Path(scratch, link.path), target)
    return sorted(link.path for link in links.files)


def _download_tar(session: Session, uuid: str, dest: Path) -> list[str]:
    """Stream the checkpoint's tar to a temporary file, then unpack it into dest once every
    member has been checked (a refused archive leaves dest untouched)."""
    with tempfile.TemporaryFile(suffix=".tar") as spool:
        with session.stream(f"{_path(uuid)}/download") as response:
            for chunk in response.iter_bytes(1 << 20):
                spool.write(chunk)
        spool.flush()
        spool.seek(0)
        return safe_extract_tar(spool, dest)
