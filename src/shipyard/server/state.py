"""What the routers need from the running master, injected through `app.state.master`."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from fastapi import Request

from shipyard.backends.base import Backend
from shipyard.server.db import Database
from shipyard.server.services.metrics import MetricKeyCache
from shipyard.server.services.signals import SignalHub
from shipyard.server.settings import Settings
from shipyard.server.workers.orchestrator import Orchestrator


@dataclass
class MasterState:
    settings: Settings
    db: Database
    backend: Backend
    hub: SignalHub
    orchestrator: Orchestrator
    started_at: datetime
    metric_keys: MetricKeyCache = field(default_factory=MetricKeyCache)


def master(request: Request) -> MasterState:
    return request.app.state.master
