"""det.core: Determined's Core API on shipyard.core (docs/determined.md)."""

from __future__ import annotations

from ._checkpoint import CheckpointContext, DownloadMode
from ._context import Context, ProfilerContext, TensorboardMode, init
from ._distributed import DistributedContext, DummyDistributedContext
from ._preempt import PreemptContext, PreemptMode
from ._searcher import SearcherContext, SearcherMode, SearcherOperation, Unit
from ._train import EarlyExitReason, TrainContext

__all__ = [
    "CheckpointContext",
    "Context",
    "DistributedContext",
    "DownloadMode",
    "DummyDistributedContext",
    "EarlyExitReason",
    "PreemptContext",
    "PreemptMode",
    "ProfilerContext",
    "SearcherContext",
    "SearcherMode",
    "SearcherOperation",
    "TensorboardMode",
    "TrainContext",
    "Unit",
    "init",
]
