from __future__ import annotations

import tarfile
import threading
from typing import Literal

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.responses import StreamingResponse

from shipyard.common import api
from shipyard.common.errors import NotFound
from shipyard.server.auth.principal import Principal, current_user
from shipyard.server.routers.auth import address
from shipyard.server.routers.responses import json_response
from shipyard.server.services import checkpoints
from shipyard.server.state import MasterState, master
from shipyard.storage import CheckpointStorage

router = APIRouter(tags=["checkpoints"])
LINK_EXPIRY_S = 900  # long enough for a large file, short enough to be worth little if leaked


@router.get(
    "/checkpoints", operation_id="rank_checkpoints", response_model=list[api.CheckpointInfo]
)
def rank_checkpoints(
    experiment_id: int | None = Query(None, description="an experiment's checkpoints"),
    trial_id: int | None = Query(None, description="a trial's checkpoints"),
    order: Literal["best", "latest"] = Query(
        "best",
        description="best: by the searcher's metric and its smaller_is_better (those without "
        "a value last); latest: by step, the last first",
    ),
    limit: int = Query(1, ge=1, le=1000),
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> Response:
    """The best (or latest) checkpoints of one experiment or one trial (give exactly one of
    experiment_id and trial_id), deleted ones left out: `checkpoint download --best`."""
    with m.db.read() as s:
        return json_response(
            checkpoints.ranked(
                experiment_id=experiment_id,
                trial_id=trial_id,
                order=order,
                limit=limit,
                visible=p.sees,
                session=s,
            )
        )


@router.get("/checkpoints/{uuid}", operation_id="get_checkpoint", response_model=api.CheckpointInfo)
def get_checkpoint(
    uuid: str, p: Principal = Depends(current_user), m: MasterState = Depends(master)
) -> api.CheckpointInfo:
    with m.db.read() as s:
        return checkpoints.info(checkpoints.get(uuid, session=s, visible=p.sees), session=s)


@router.delete(
    "/checkpoints/{uuid}", operation_id="delete_checkpoint", response_model=api.CheckpointInfo
)
def delete_checkpoint(
    uuid: str,
    request: Request,
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> api.CheckpointInfo:
    """Delete a checkpoint's files from its storage and mark it DELETED (the answer). 409 for
    the checkpoint a trial that may still run resumes from, or when its storage fails to
    delete the files (it is kept then: try again); 404 for one already deleted. Only its
    owner (an editor) or a workspace admin may, as for its experiment. Audited."""
    checkpoints.delete_as_user(
        m.db,
        uuid,
        visible=p.sees,
        grants=p.grants,
        username=p.username,
        address=address(request),
    )
    with m.db.read() as s:
        return checkpoints.info(checkpoints.get(uuid, session=s), session=s)


@router.get(
    "/checkpoints/{uuid}/download",
    operation_id="download_checkpoint",
    response_class=StreamingResponse,
    responses={200: {"content": {"application/x-tar": {}}}},
)
def download_checkpoint(
    uuid: str, p: Principal = Depends(current_user), m: MasterState = Depends(master)
) -> StreamingResponse:
    """The checkpoint's files as an uncompressed tar stream."""
    storage = _complete_checkpoint(uuid, p, m)
    return StreamingResponse(_tar_stream(storage, uuid), media_type="application/x-tar")


@router.get(
    "/checkpoints/{uuid}/links",
    operation_id="get_checkpoint_links",
    response_model=api.CheckpointLinks,
)
def get_checkpoint_links(
    uuid: str, p: Principal = Depends(current_user), m: MasterState = Depends(master)
) -> api.CheckpointLinks:
    """Short-lived URLs to the checkpoint's files in its object store (S3), so a client
    downloads them without credentials of its own; ``direct: false`` for a store that has
    none (a shared file system): download through /checkpoints/{uuid}/download then."""
    storage = _complete_checkpoint(uuid, p, m)
    links = storage.links(uuid, LINK_EXPIRY_S)
    if links is None:
        return api.CheckpointLinks(uuid=uuid, direct=False)
    files = [api.CheckpointFileLink(path=k, size=size, url=url) for k, (size, url) in links.items()]
    return api.CheckpointLinks(uuid=uuid, direct=True, expires_in_s=LINK_EXPIRY_S, files=files)


def _complete_checkpoint(uuid: str, p: Principal, m: MasterState) -> CheckpointStorage:
    """The storage of a checkpoint the caller sees, whose files are all there."""
    with m.db.read() as s:
        ckpt = checkpoints.get(uuid, session=s, visible=p.sees)
        storage = checkpoints.storage_of(ckpt, session=s)
        state = ckpt.state
    if state != checkpoints.COMPLETED or not storage.is_complete(uuid):
        raise NotFound(f"checkpoint {uuid} has been deleted or its files are gone")
    return storage


def _tar_stream(storage: CheckpointStorage, uuid: str):
    """Stream a tar of the checkpoint's files through a pipe without building it in memory."""
    import os

    read_fd, write_fd = os.pipe()

    def writer() -> None:
        # The pipe's end is opened first, so it is closed (the reader sees the end) whatever fails.
        with (
            os.fdopen(write_fd, "wb") as sink,
            storage.restore_path(uuid) as path,
            tarfile.open(fileobj=sink, mode="w|") as tar,
        ):
            for item in sorted(path.rglob("*")):
                tar.add(item, arcname=str(item.relative_to(path)), recursive=False)

    threading.Thread(target=writer, daemon=True).start()
    with os.fdopen(read_fd, "rb") as source:
        while chunk := source.read(1 << 16):
            yield chunk
