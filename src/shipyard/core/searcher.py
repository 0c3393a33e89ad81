"""ctx.searcher: what the hyperparameter searcher wants from this trial."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from shipyard.core._env import env_int, env_str

if TYPE_CHECKING:
    from shipyard.core._signals import SignalPoller  # imports http.client: master mode only


class SearcherContext(Protocol):
    max_length: int | None
    """How long the searcher wants the trial to train (in its max_length unit), or None."""
    metric: str | None
    """The validation metric the searcher decides on, or None."""

    def should_stop(self) -> bool:
        """True when the searcher has no more use for this trial; cheap to call every step."""
        ...


class LocalSearcher:
    """No master: the searcher never stops the trial; max_length/metric come from the env."""

    def __init__(self) -> None:
        self.max_length = env_int("SHIPYARD_SEARCHER_MAX_LENGTH")
        self.metric = env_str("SHIPYARD_SEARCHER_METRIC")

    def should_stop(self) -> bool:
        return False


class MasterSearcher:
    def __init__(self, signals: SignalPoller) -> None:
        self._signals = signals
        self.max_length = env_int("SHIPYARD_SEARCHER_MAX_LENGTH")
        self.metric = env_str("SHIPYARD_SEARCHER_METRIC")

    def should_stop(self) -> bool:
        self._signals.ensure_started()
        return self._signals.stop
