"""Trial: what a user writes for the Trainer (Determined's PyTorchTrial, simplified)."""

from __future__ import annotations

import abc
from collections.abc import Mapping
from typing import Any

import torch
from torch import nn
from torch.utils.data import DataLoader


class Trial(abc.ABC):
    """Subclass it and build the model, optimizer and data; the Trainer runs the loop.

    ``__init__(self, ctx)`` takes the shipyard.core context: read the hyperparameters from
    ``ctx.info.hparams`` there. Calling ``super().__init__(ctx)`` is optional.
    """

    def __init__(self, ctx: Any = None) -> None:
        self.ctx = ctx

    @abc.abstractmethod
    def build_model(self) -> nn.Module:
        """The model, on the CPU; the Trainer moves it to the device (and wraps it in
        DistributedDataParallel when distributed)."""

    @abc.abstractmethod
    def build_optimizer(self, model: nn.Module) -> torch.optim.Optimizer:
        """The optimizer over ``model``'s parameters (the model is already on its device)."""

    def build_lr_scheduler(
        self, optimizer: torch.optim.Optimizer
    ) -> torch.optim.lr_scheduler.LRScheduler | None:
        """An optional learning-rate scheduler; the Trainer steps it after every optimizer
        step."""
        return None

    @abc.abstractmethod
    def build_training_data_loader(self) -> DataLoader:
        """The training data (a map-style dataset). The batch size is per process: when
        distributed, the Trainer shards the data across processes and keeps it."""

    @abc.abstractmethod
    def build_validation_data_loader(self) -> DataLoader:
        """The validation data; sharded across processes when distributed, without
        repeating a sample."""

    @abc.abstractmethod
    def train_batch(self, batch: Any, model: nn.Module, batch_idx: int) -> Mapping[str, Any]:
        """Forward one batch and return its metrics, including ``"loss"`` (a scalar tensor
        the Trainer backpropagates). ``batch`` is on the model's device; ``batch_idx`` counts
        the data-loader batches trained before this one. ``model`` is the wrapped model when
        distributed: call it, and use ``model.module`` for its attributes."""

    @abc.abstractmethod
    def evaluate_batch(self, batch: Any, model: nn.Module) -> Mapping[str, Any]:
        """Metrics of one validation batch (scalar tensors or numbers, e.g. the batch's mean
        loss and accuracy). The Trainer averages them over the validation set, weighting
        each batch by its number of samples. Runs under ``torch.no_grad()`` in eval mode."""
