"""det.core.init() and det.core.Context: Shipyard's Context seen through Determined's API."""

from __future__ import annotations

import enum
import sys
from types import TracebackType
from typing import Any

from .._errors import InvalidHP, not_supported
from .._info import ClusterInfo, get_cluster_info
from ._checkpoint import CheckpointContext
from ._distributed import DistributedContext, close_shared, shared_distributed
from ._preempt import PreemptContext, PreemptMode
from ._searcher import SearcherContext
from ._train import TrainContext


class TensorboardMode(enum.Enum):
    AUTO = "AUTO"
    MANUAL = "MANUAL"


class ProfilerContext:
    """Determined's system-metrics profiler: Shipyard has none yet."""

    def on(self, *args: Any, **kwargs: Any) -> None:
        raise not_supported("core_context.profiler.on()")

    def off(self) -> None:
        return None

    def _close(self) -> None:
        return None


class Context:
    """``with det.core.init() as core_context:``. Its parts are Determined's (train,
    checkpoint, searcher, preempt, distributed, info); leaving the block delivers every
    metric and ends the trial's connection to the master, as Shipyard's Context does.
    ``det.InvalidHP`` leaving the block ends the process with exit code 0 (Determined's
    behaviour): the trial ends without being restarted."""

    def __init__(self, inner: Any, distributed: DistributedContext, preempt_mode: Any) -> None:
        self._shipyard = inner  # shipyard.core.Context: Shipyard's own integrations take it
        self.distributed = distributed
        self.info: ClusterInfo | None = get_cluster_info()
        self.train = TrainContext(inner)
        self.checkpoint = CheckpointContext(inner)
        self.searcher = SearcherContext(inner, self.train)
        self.preempt = PreemptContext(inner, preempt_mode)
        self.profiler = ProfilerContext()

    @property
    def experimental(self) -> Any:
        raise not_supported("core_context.experimental")

    def alert(self, *args: Any, **kwargs: Any) -> None:
        raise not_supported("core_context.alert()")

    def start(self) -> None:
        return None

    def __enter__(self) -> Context:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            self._shipyard.__exit__(exc_type, exc, tb)
        finally:
            close_shared()
        if isinstance(exc, InvalidHP):
            # As Determined does: the process exits 0, so the trial ends without a restart
            # (a failure would be restarted up to max_restarts, failing the same way). The
            # master has the message: Shipyard's __exit__ sent it as the run's error.
            print(
                f"[shipyard] det.InvalidHP: {exc}; the trial ends here, without a restart",
                file=sys.stderr,
                flush=True,
            )
            raise SystemExit(0) from None

    def close(self, *args: Any) -> None:
        try:
            self._shipyard.close()
        finally:
            close_shared()


def init(
    *,
    distributed: DistributedContext | None = None,
    checkpoint_storage: str | dict[str, Any] | None = None,
    preempt_mode: PreemptMode = PreemptMode.WorkersAskChief,
    tensorboard_mode: TensorboardMode = TensorboardMode.AUTO,
) -> Context:
    """Connect the script to the Shipyard trial it runs in (or run locally, printing
    metrics, when there is none). ``distributed``: the rank's DistributedContext; without
    one the launcher's ranks are used. Checkpoint storage is the experiment's."""
    if checkpoint_storage is not None:
        raise not_supported(
            "det.core.init(checkpoint_storage=...)",
            "set checkpoint_storage in the experiment config",
        )
    if distributed is None:
        distributed = DistributedContext._from_launcher()
    elif not isinstance(distributed, DistributedContext):
        raise TypeError(
            "det.core.init(distributed=...) takes a det.core.DistributedContext, e.g. "
            f"DistributedContext.from_torch_distributed(), got {type(distributed).__name__}"
        )
    else:
        distributed._check_against_launcher()
    mode = PreemptMode(preempt_mode)
    # Imported here: `import determined` stays as light as `import shipyard.core`.
    from shipyard.core._context import make_context

    inner = make_context(master=None, hparams=None, distributed=shared_distributed())
    return Context(inner, distributed, mode)
