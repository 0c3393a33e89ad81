"""The master itself: its identity and its slots."""

from __future__ import annotations

from shipyard.client.session import Session
from shipyard.common.api import MasterInfo, SlotInfo


def get_master(session: Session) -> MasterInfo:
    return MasterInfo.model_validate(session.get("/master"))


def list_slots(session: Session) -> list[SlotInfo]:
    return [SlotInfo.model_validate(item) for item in session.get("/slots")]


def get_health(session: Session) -> dict:
    """{"status": "ok", "version", "auth"}: answered without a token."""
    return session.get("/health")
