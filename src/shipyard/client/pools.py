"""The master's resource pools."""

from __future__ import annotations

from shipyard.client.session import Session
from shipyard.common.api import PoolInfo


def list_pools(session: Session) -> list[PoolInfo]:
    return [PoolInfo.model_validate(item) for item in session.get("/resource-pools")]
