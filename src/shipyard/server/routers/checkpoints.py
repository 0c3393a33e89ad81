from __future__ import annotations

import tarfile
import threading

from fastapi import APIRouter, Depends
from fastapi.responses import StreamingResponse

from shipyard.common import api
from shipyard.common.errors import NotFound
from shipyard.server.auth.principal import Principal, current_user
from shipyard.server.services import checkpoints
from shipyard.server.state import MasterState, master
from shipyard.storage import CheckpointStorage

router = APIRouter(tags=["checkpoints"])


@router.get("/checkpoints/{uuid}", operation_id="get_checkpoint", response_model=api.CheckpointInfo)
def get_checkpoint(
    uuid: str, p: Principal = Depends(current_user), m: MasterState = Depends(master)
) -> api.CheckpointInfo:
    with m.db.read() as s:
        return checkpoints.info(checkpoints.get(uuid, session=s, visible=p.sees), session=s)


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
    with m.db.read() as s:
        ckpt = checkpoints.get(uuid, session=s, visible=p.sees)
        storage = checkpoints.storage_of(ckpt, session=s)
        state = ckpt.state
    if state != checkpoints.COMPLETED or not storage.is_complete(uuid):
        raise NotFound(f"checkpoint {uuid} has been deleted or its files are gone")
    return StreamingResponse(_tar_stream(storage, uuid), media_type="application/x-tar")


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
