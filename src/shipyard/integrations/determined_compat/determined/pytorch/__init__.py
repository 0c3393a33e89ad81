"""determined.pytorch: Determined's PyTorchTrial API, run by Shipyard's Trainer.

The implementation is shipyard.integrations.determined_trial; these are its public names
(docs/trainer.md, "Determined's PyTorchTrial")."""

from shipyard.integrations.determined_trial._context import PyTorchTrialContext
from shipyard.integrations.determined_trial._data import (
    DataLoader,
    TorchData,
    data_length,
    to_device,
)
from shipyard.integrations.determined_trial._lr import LRScheduler
from shipyard.integrations.determined_trial._trial import PyTorchCallback, PyTorchTrial

from .._errors import missing_module

__all__ = [
    "DataLoader",
    "LRScheduler",
    "PyTorchCallback",
    "PyTorchTrial",
    "PyTorchTrialContext",
    "TorchData",
    "data_length",
    "to_device",
]

# Determined's other names (Trainer, init, MetricReducer, samplers, ...): importing this
# package works, using one of them raises NotSupportedYet.
__getattr__ = missing_module(
    "determined.pytorch",
    "Shipyard runs a PyTorchTrial through `entrypoint: model_def:MyTrial` (docs/trainer.md)",
)
