"""The scheduler's queue."""

from __future__ import annotations

from shipyard.client.session import Session
from shipyard.common.api import JobInfo


def list_jobs(session: Session) -> list[JobInfo]:
    return [JobInfo.model_validate(item) for item in session.get("/jobs")]
