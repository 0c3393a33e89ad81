"""Artifacts: the trial records one it wrote (task token: ``trial_router``, included
without user authentication), users list a trial's and read their content (``router``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, BinaryIO

from fastapi import APIRouter, Body, Depends, Request, Response
from fastapi.responses import StreamingResponse

from shipyard.common.api_artifacts import ArtifactInfo
from shipyard.server.auth.principal import Principal, TaskGrant, current_user, trial_task
from shipyard.server.services import artifacts
from shipyard.server.state import MasterState, master

trial_router = APIRouter(tags=["trial-side"])
router = APIRouter(tags=["trials"])
CHUNK = 1 << 16


@trial_router.post(
    "/trials/{trial_id}/artifacts", operation_id="report_artifact", response_model=ArtifactInfo
)
def report_artifact(
    trial_id: int,
    body: dict[str, Any] = Body(...),
    grant: TaskGrant = Depends(trial_task),
    m: MasterState = Depends(master),
) -> ArtifactInfo:
    """Record an artifact whose file the trial has written to its experiment's checkpoint
    storage, at ``artifacts/trial-<id>/<step or "none">/<name>``: ``{"run_id", "name",
    "steps_completed", "kind", "media_type", "size", "sha256", "storage_path"}``. One
    already recorded for the same name and step is replaced."""
    run_id = grant.run(body.get("run_id"))
    report = artifacts.check_report(trial_id, body, max_bytes=m.settings.artifact_max_bytes)
    return artifacts.keep(m.db, trial_id, run_id, report)


@router.get(
    "/trials/{trial_id}/artifacts",
    operation_id="list_trial_artifacts",
    response_model=list[ArtifactInfo],
)
def list_trial_artifacts(
    trial_id: int, p: Principal = Depends(current_user), m: MasterState = Depends(master)
) -> list[ArtifactInfo]:
    """The trial's artifacts (images, texts, tables, files), those of no step first, then
    by step and name; ``url`` reads each one's content."""
    with m.db.read() as s:
        return artifacts.list_for_trial(trial_id, visible=p.sees, session=s)


@router.get(
    "/trials/{trial_id}/artifacts/{artifact_id}/content",
    operation_id="get_artifact_content",
    response_class=StreamingResponse,
    responses={
        200: {"content": {"*/*": {}}, "description": "the bytes, with the artifact's media type"},
        304: {"description": "unchanged since the ETag sent in If-None-Match"},
    },
)
def get_artifact_content(
    trial_id: int,
    artifact_id: int,
    request: Request,
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> Response:
    """The artifact's bytes, with its media type. Images, plain texts and tables are shown
    in place; anything else (HTML and SVG included) comes as a download."""
    with m.db.read() as s:  # the storage's keys may be opened here: not in a write transaction
        artifact = artifacts.for_reading(trial_id, artifact_id, visible=p.sees, session=s)
    disposition = "inline" if artifacts.shown_inline(artifact.media_type) else "attachment"
    headers = {
        "Content-Disposition": f'{disposition}; filename="{artifact.name}"',
        "X-Content-Type-Options": "nosniff",
        # Whatever a browser makes of it, it runs no script with the master's origin.
        "Content-Security-Policy": "sandbox",
        "ETag": f'"{artifact.sha256}"',
        "Cache-Control": "private, no-cache",  # a rerun may replace it: revalidate (304)
    }
    if request.headers.get("if-none-match") == headers["ETag"]:
        return Response(status_code=304, headers=headers)
    stream = artifacts.open_content(artifact)
    return StreamingResponse(_chunks(stream), media_type=artifact.media_type, headers=headers)


def _chunks(stream: BinaryIO) -> Iterator[bytes]:
    try:
        while chunk := stream.read(CHUNK):
            yield chunk
    finally:
        stream.close()
