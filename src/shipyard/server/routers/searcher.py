"""Searcher tools that run nothing: preview a search from its config."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from shipyard.common import api
from shipyard.server.services import searching

router = APIRouter(tags=["searcher"])


@router.post("/preview-search", operation_id="preview_search", response_model=api.SearchPreview)
async def preview_search(req: api.PreviewSearchRequest) -> api.SearchPreview:
    """Brackets, rungs, trials per rung and the compute a search needs, without running it."""
    plan = await run_in_threadpool(searching.preview, req.config_yaml, req.config_file)
    return api.SearchPreview.model_validate(plan)
