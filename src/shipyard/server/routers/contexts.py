from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from starlette.concurrency import run_in_threadpool

from shipyard.common import api
from shipyard.common.errors import TooLarge
from shipyard.server.services import contexts
from shipyard.server.state import MasterState, master

router = APIRouter(tags=["contexts"])


@router.post(
    "/contexts",
    operation_id="upload_context",
    response_model=api.ContextUploaded,
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/gzip": {"schema": {"type": "string", "format": "binary"}}},
        }
    },
)
async def upload_context(request: Request, m: MasterState = Depends(master)) -> api.ContextUploaded:
    """Upload a code snapshot: the raw bytes of a gzip'd tar archive."""
    limit_mb = m.settings.max_context_mb
    declared = int(request.headers.get("content-length") or 0)
    if declared > limit_mb * 2**20:
        raise TooLarge(
            f"context archive is {declared / 2**20:.1f} MiB, over the limit of {limit_mb} MiB"
        )
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit_mb * 2**20:
            raise TooLarge(f"context archive is over the limit of {limit_mb} MiB")
        chunks.append(chunk)

    def store() -> api.ContextUploaded:
        context_id, size, files = contexts.save_archive(
            chunks, home=m.settings.home, limit_bytes=limit_mb * 2**20
        )
        with m.db.write() as s:
            row = contexts.record_context(context_id, size, files, session=s)
            return api.ContextUploaded(id=row.id, size=row.size)

    return await run_in_threadpool(store)
