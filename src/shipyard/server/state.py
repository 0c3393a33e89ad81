"""What the routers need from the running master, injected through `app.state.master`."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from fastapi import Request
from sqlalchemy.orm import Session

from shipyard.backends.pooled import PooledBackend
from shipyard.search.options import SearcherOptions
from shipyard.server.auth.token_cache import TokenCache
from shipyard.server.auth.tokens import TaskTokens
from shipyard.server.db import Database
from shipyard.server.pools import Pool
from shipyard.server.services.experiment_config import config_by_id
from shipyard.server.services.login import LoginGuard
from shipyard.server.services.metrics import MetricKeyCache
from shipyard.server.services.signals import SignalHub
from shipyard.server.settings import Settings
from shipyard.server.workers.orchestrator import Orchestrator


@dataclass
class MasterState:
    settings: Settings
    db: Database
    backend: PooledBackend
    hub: SignalHub
    orchestrator: Orchestrator
    pools: dict[str, Pool]
    default_pool: str  # for experiments that name no resources.resource_pool
    started_at: datetime
    task_tokens: TaskTokens
    login_guard: LoginGuard = field(default_factory=LoginGuard)
    # Clear it after any change that ends tokens (see auth/token_cache.py).
    token_cache: TokenCache = field(default_factory=TokenCache)
    metric_keys: MetricKeyCache = field(default_factory=MetricKeyCache)
    _searcher_by_experiment: dict[int, SearcherOptions] = field(default_factory=dict)

    def searcher_options(self, experiment_id: int, *, session: Session) -> SearcherOptions:
        """The searcher fields of an experiment's config (they never change: cached)."""
        if experiment_id not in self._searcher_by_experiment:
            config = config_by_id(experiment_id, session=session)
            self._searcher_by_experiment[experiment_id] = SearcherOptions.of(config.searcher)
        return self._searcher_by_experiment[experiment_id]


def master(request: Request) -> MasterState:
    return request.app.state.master
