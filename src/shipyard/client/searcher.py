"""Searcher tools that run nothing: the plan of a search, worked out by the master."""

from __future__ import annotations

from pathlib import Path

from shipyard.client.session import Session
from shipyard.client.submit import load_local_config, read_config_text
from shipyard.common.api import PreviewSearchRequest, SearchPreview


def preview_search(session: Session, config_path: str | Path) -> SearchPreview:
    """Checked here first (errors with file, line and column), then planned by the master."""
    load_local_config(config_path)
    request = PreviewSearchRequest(
        config_yaml=read_config_text(config_path), config_file=str(config_path)
    )
    body = session.post("/preview-search", json=request.model_dump(mode="json"))
    return SearchPreview.model_validate(body)
