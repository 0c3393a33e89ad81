"""core_context.preempt: whether the trial should checkpoint and exit now."""

from __future__ import annotations

import enum
from typing import Any

from .._errors import not_supported


class PreemptMode(enum.Enum):
    """WorkersAskChief (the default): every rank calls should_preempt() at the same point
    and gets the chief's answer (Shipyard's own behaviour). ChiefOnly: only the chief calls
    it. WorkersAskMaster: each rank asks the master (not in Shipyard yet)."""

    WorkersAskChief = "WORKERS_ASK_CHIEF"
    WorkersAskMaster = "WORKERS_ASK_MASTER"
    ChiefOnly = "CHIEF_ONLY"


class PreemptContext:
    def __init__(self, inner: Any, mode: PreemptMode) -> None:
        self._ctx = inner
        self._mode = mode

    def should_preempt(self, auto_ack: bool = True) -> bool:
        dist = self._ctx.distributed
        if dist.size == 1 or self._mode == PreemptMode.WorkersAskChief:
            return bool(self._ctx.preempt.should_preempt())
        if self._mode == PreemptMode.WorkersAskMaster:
            raise not_supported(
                "PreemptMode.WorkersAskMaster with several ranks",
                "use the default, WorkersAskChief",
            )
        if dist.rank != 0:
            raise RuntimeError(
                "should_preempt() with PreemptMode.ChiefOnly is for the chief (rank 0) only"
            )
        # The chief's own answer, without the collective the other ranks are not in.
        from shipyard.core._chief import CollectivePreempt

        preempt = self._ctx.preempt
        if not isinstance(preempt, CollectivePreempt):
            raise RuntimeError(
                "should_preempt() with PreemptMode.ChiefOnly: with several ranks Shipyard's "
                f"preempt context should be a CollectivePreempt, got {type(preempt).__name__}"
            )
        return bool(preempt._inner.should_preempt())

    def acknowledge_preemption_signal(self) -> None:
        """Shipyard needs no acknowledgement: exiting after a checkpoint is enough."""

    def close(self) -> None:
        return None
