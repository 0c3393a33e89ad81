"""shipyard.integrations.torch: a training loop for PyTorch users who prefer not to write one.

    from shipyard.integrations.torch import Batches, Epochs, Trainer, Trial

    with shipyard.core.init() as ctx:
        Trainer(MyTrial(ctx), ctx).fit(max_length=Epochs(3), validation_period=Batches(100))

A ManualTrial calls backward and steps its optimizers itself (several models and
optimizers). See docs/trainer.md.
"""

from __future__ import annotations

from shipyard.integrations.torch._manual import ManualOptimization, ManualTrial
from shipyard.integrations.torch._trainer import Trainer
from shipyard.integrations.torch._trial import Trial
from shipyard.integrations.torch._units import Batches, Epochs, Records

__all__ = [
    "Batches",
    "Epochs",
    "ManualOptimization",
    "ManualTrial",
    "Records",
    "Trainer",
    "Trial",
]
