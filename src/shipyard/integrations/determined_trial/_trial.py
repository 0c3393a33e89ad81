"""PyTorchTrial: the class a Determined user subclasses (Determined's documented API)."""

from __future__ import annotations

import abc
from typing import Any

from torch.utils.data import DataLoader as TorchDataLoader

from shipyard.integrations.determined_trial._context import PyTorchTrialContext
from shipyard.integrations.determined_trial._data import DataLoader, TorchData, data_length


class PyTorchTrial(abc.ABC):
    """Build the model, optimizer and data in ``__init__(context)`` and the two
    ``build_*_data_loader`` methods; train one batch in ``train_batch`` (calling
    ``context.backward`` and ``context.step_optimizer``); validate in ``evaluate_batch``
    (or ``evaluate_full_dataset``). Run it with ``entrypoint: model_def:MyTrial``."""

    trial_context_class = PyTorchTrialContext

    @abc.abstractmethod
    def __init__(self, context: PyTorchTrialContext) -> None:
        pass

    @abc.abstractmethod
    def train_batch(self, batch: TorchData, epoch_idx: int, batch_idx: int) -> dict[str, Any] | Any:
        """Metrics of the batch (a dict, or a loss tensor), averaged per reporting period."""

    @abc.abstractmethod
    def build_training_data_loader(self) -> DataLoader | TorchDataLoader:
        pass

    @abc.abstractmethod
    def build_validation_data_loader(self) -> DataLoader | TorchDataLoader:
        pass

    def build_callbacks(self) -> dict[str, Any]:
        return {}

    def evaluate_batch(self, batch: TorchData, batch_idx: int) -> dict[str, Any]:
        """Metrics of one validation batch (averaged over the validation set, weighted by
        batch size). Define this or ``evaluate_full_dataset``."""
        raise NotImplementedError

    def evaluate_full_dataset(self, data_loader: TorchDataLoader) -> dict[str, Any]:
        """The validation metrics over the whole validation loader, on the chief only."""
        raise NotImplementedError

    def get_batch_length(self, batch: Any) -> int:
        return data_length(batch)


class PyTorchCallback:
    """Determined's callback base class, so a model_def that defines callbacks imports; the
    runner refuses a trial whose ``build_callbacks()`` returns any (not supported yet)."""
