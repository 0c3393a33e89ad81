"""Artifacts (issue 20): files a trial keeps beside its metrics, as the API lists them."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field


class ArtifactInfo(BaseModel):
    """One artifact of a trial: GET /trials/{id}/artifacts lists them, and what the trial's
    POST /trials/{id}/artifacts recorded answers with."""

    id: int
    experiment_id: int
    trial_id: int
    run_id: int = Field(description="the run that logged it (a rerun's replaces it)")
    name: str
    steps_completed: int | None = Field(description="the step it belongs to; None: no step")
    kind: str = Field(description="image, text, table or file")
    media_type: str
    size: int = Field(description="bytes")
    sha256: str
    storage_path: str = Field(description="its key in the experiment's checkpoint storage")
    created_at: datetime
    url: str = Field(description="where its content is read: GET, with the same credentials")
