"""The audit log: logins and failed logins, tokens made and revoked, users made, changed
and deactivated, admin actions. Written by the service that acts, in its transaction."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from shipyard.common import api_users
from shipyard.server import orm


def record(
    action: str,
    *,
    actor: str,
    target: str = "",
    address: str = "",
    session: Session,
    **detail: Any,
) -> None:
    session.add(
        orm.AuditEvent(actor=actor, action=action, target=target, address=address, detail=detail)
    )


def events(
    *, since: datetime | None, user: str | None, limit: int, session: Session
) -> list[api_users.AuditEventInfo]:
    """Newest first; `user` matches the actor or the target user."""
    query = select(orm.AuditEvent).order_by(orm.AuditEvent.id.desc()).limit(limit)
    if since is not None:
        query = query.where(orm.AuditEvent.at >= since)
    if user is not None:
        query = query.where(
            (orm.AuditEvent.actor == user) | (orm.AuditEvent.target == f"user:{user}")
        )
    return [
        api_users.AuditEventInfo(
            id=e.id,
            at=e.at,
            actor=e.actor,
            action=e.action,
            target=e.target,
            address=e.address,
            detail=e.detail,
        )
        for e in session.scalars(query)
    ]
