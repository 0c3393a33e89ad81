"""ctx.preempt: whether the master wants this trial to stop now (pause, preemption)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from shipyard.core._signals import SignalPoller  # imports http.client: master mode only


class PreemptContext(Protocol):
    def should_preempt(self) -> bool:
        """True when the trial should checkpoint and exit; cheap to call every step."""
        ...


class LocalPreempt:
    """No master: nothing ever preempts."""

    def should_preempt(self) -> bool:
        return False


class MasterPreempt:
    def __init__(self, signals: SignalPoller) -> None:
        self._signals = signals

    def should_preempt(self) -> bool:
        self._signals.ensure_started()
        return self._signals.preempt
