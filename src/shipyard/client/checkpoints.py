"""Checkpoints: list, describe, and download into a local directory."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Literal
from urllib.parse import quote

import httpx

from shipyard.client.contexts import Progress
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


def rank_checkpoints(
    session: Session,
    *,
    experiment_id: int | None = None,
    trial_id: int | None = None,
    order: Literal["best", "latest"] = "best",
    limit: int = 1,
) -> list[CheckpointInfo]:
    """An experiment's or a trial's checkpoints, the best first (by its searcher's metric and
    smaller_is_better) or the latest first; deleted ones left out."""
    params = {"experiment_id": experiment_id, "trial_id": trial_id, "order": order, "limit": limit}
    return [CheckpointInfo.model_validate(c) for c in session.get("/checkpoints", params=params)]


def top_checkpoint(
    session: Session,
    *,
    experiment_id: int | None = None,
    trial_id: int | None = None,
    order: Literal["best", "latest"] = "best",
) -> CheckpointInfo:
    """The best (or latest) checkpoint of an experiment or a trial; NotFound when it has none."""
    found = rank_checkpoints(
        session, experiment_id=experiment_id, trial_id=trial_id, order=order, limit=1
    )
    if not found:
        owner = f"experiment {experiment_id}" if trial_id is None else f"trial {trial_id}"
        raise NotFound(f"{owner} has no checkpoint")
    return found[0]


def delete_checkpoint(session: Session, uuid: str) -> CheckpointInfo:
    """Delete the checkpoint's files from its storage; its record stays, marked DELETED."""
    return CheckpointInfo.model_validate(session.delete(_path(uuid)))


def _path(uuid: str) -> str:
    # A checkpoint id is one path segment; the master refuses any with "/" when stored.
    if not uuid or "/" in uuid:
        raise NotFound(f"checkpoint {uuid!r} does not exist")
    return f"/checkpoints/{quote(uuid, safe='')}"


def get_checkpoint(session: Session, uuid: str) -> CheckpointInfo:
    return CheckpointInfo.model_validate(session.get(_path(uuid)))


def download_checkpoint(
    session: Session, uuid: str, dest: str | Path, *, progress: Progress | None = None
) -> list[str]:
    """The checkpoint's files into dest; returns them. From an object store, straight from
    it through the short-lived URLs the master signs (the caller needs no credentials of
    the store); else through the master, as a tar. `progress` hears the bytes received."""
    links = CheckpointLinks.model_validate(session.get(f"{_path(uuid)}/links"))
    if links.direct:
        return fetch_links(links, Path(dest), progress=progress)
    total = get_checkpoint(session, uuid).size if progress is not None else 0
    return _download_tar(session, uuid, Path(dest), total=total, progress=progress)


def fetch_links(
    links: CheckpointLinks, dest: Path, *, progress: Progress | None = None
) -> list[str]:
    """Each file GET from its URL into a scratch directory beside dest, then moved into
    dest: a failed download leaves dest as it was."""
    for link in links.files:
        if not link.path or escapes(link.path):
            raise InvalidRequest(f"checkpoint {links.uuid}: refusing file path {link.path!r}")
    dest.mkdir(parents=True, exist_ok=True)
    total, done = sum(link.size for link in links.files), 0
    if progress is not None:
        progress(0, total)
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
                        done += len(chunk)
                        if progress is not None:
                            progress(done, total)
        for link in links.files:
            target = dest / link.path
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(Path(scratch, link.path), target)
    return sorted(link.path for link in links.files)


def _download_tar(
    session: Session, uuid: str, dest: Path, *, total: int, progress: Progress | None
) -> list[str]:
    """Stream the checkpoint's tar to a temporary file, then unpack it into dest once every
    member has been checked (a refused archive leaves dest untouched). `total`: the files'
    size (the tar adds its headers: the count is capped at it until the end)."""
    with tempfile.TemporaryFile(suffix=".tar") as spool:
        done = 0
        with session.stream(f"{_path(uuid)}/download") as response:
            for chunk in response.iter_bytes(1 << 20):
                spool.write(chunk)
                done += len(chunk)
                if progress is not None:
                    progress(min(done, total), total)
        if progress is not None:
            progress(total, total)
        spool.flush()
        spool.seek(0)
        return safe_extract_tar(spool, dest)
