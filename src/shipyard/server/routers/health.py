"""The one API route that needs no credentials: is a Shipyard master answering here?"""

from __future__ import annotations

from fastapi import APIRouter, Depends

import shipyard
from shipyard.server.state import MasterState, master

router = APIRouter(tags=["master"])


@router.get("/health", operation_id="get_health")
def get_health(m: MasterState = Depends(master)) -> dict:
    """For probes and `shipyard up`: answers while the master serves, says nothing private."""
    return {"status": "ok", "version": shipyard.__version__, "auth": m.settings.auth}
