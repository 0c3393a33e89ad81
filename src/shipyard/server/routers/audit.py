"""The audit log, for cluster admins."""

from __future__ import annotations

from datetime import datetime

from fastapi import APIRouter, Depends, Query

from shipyard.common import api_users
from shipyard.server.auth.permissions import Action
from shipyard.server.auth.principal import Principal, needs
from shipyard.server.services import audit
from shipyard.server.state import MasterState, master

router = APIRouter(tags=["audit"])


@router.get(
    "/audit", operation_id="list_audit_events", response_model=list[api_users.AuditEventInfo]
)
def list_audit_events(
    since: datetime | None = Query(None, description="only events at or after this time"),
    user: str | None = Query(None, description="events by or about this user"),
    limit: int = Query(200, ge=1, le=10_000),
    _p: Principal = Depends(needs(Action.READ_AUDIT_LOG)),
    m: MasterState = Depends(master),
) -> list[api_users.AuditEventInfo]:
    with m.db.read() as s:
        return audit.events(since=since, user=user, limit=limit, session=s)
