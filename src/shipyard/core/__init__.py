"""The training-side API: ``with shipyard.core.init() as ctx:``.

Imported by every trial process, so this module stays tiny: the implementation is imported
when ``init()`` is called, and http.client only when there is a master to talk to.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shipyard.common.errors import CheckpointWriteError
    from shipyard.core._context import Context

__all__ = ["CheckpointWriteError", "Context", "init"]


def init(*, master: str | None = None, hparams: dict[str, Any] | None = None) -> Context:
    """Connect training code to Shipyard.

    With a master (``master`` given, or SHIPYARD_MASTER set, as it is in every trial the
    master launches) metrics, checkpoints and signals go to it. Without one the script runs
    locally: metrics are printed, checkpoints go to ``./checkpoints`` (or to
    SHIPYARD_CHECKPOINT_STORAGE), nothing is ever preempted, and ``hparams`` (or
    SHIPYARD_HPARAMS) are the hyperparameters.
    """
    from shipyard.core._context import make_context

    return make_context(master=master, hparams=hparams)


def __getattr__(name: str) -> Any:
    if name == "Context":
        from shipyard.core._context import Context

        return Context
    if name == "CheckpointWriteError":
        from shipyard.common.errors import CheckpointWriteError

        return CheckpointWriteError
    raise AttributeError(f"module 'shipyard.core' has no attribute {name!r}")
