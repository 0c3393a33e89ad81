"""Manual optimization: a trial whose ``train_batch`` calls backward and steps its optimizers
itself, with as many models and optimizers as it likes. The Trainer still owns the data,
the periods, the reports, the checkpoints and the process group."""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import torch
from torch import nn
from torch.utils.data import DataLoader


class ManualOptimization:
    """What the Trainer gives ``ManualTrial.setup``: register each model, optimizer and
    scheduler here (the Trainer checkpoints and restores them), then train with
    ``backward`` and ``step``."""

    def __init__(self, *, device: torch.device, rank: int, world: int, local_rank: int) -> None:
        self.device = device
        self.rank, self.world, self.local_rank = rank, world, local_rank
        self.models: list[nn.Module] = []  # as registered (unwrapped): what is checkpointed
        self.optimizers: list[torch.optim.Optimizer] = []
        self.lr_schedulers: list[Any] = []
        self.extras: list[Any] = []
        self.stop_requested = False
        # False: the Trainer hands train_batch and evaluate_batch the batches as the loader
        # gives them (the trial moves them itself).
        self.auto_to_device = True
        # The batches trained before this run: set once a checkpoint is restored (after
        # setup and the data loaders are built).
        self.initial_batch = 0
        # This process's batches per epoch (its share of the training loader): set once
        # the Trainer has built the loader.
        self.batches_per_epoch: int | None = None

    def model(self, model: nn.Module) -> nn.Module:
        """Move ``model`` to the device; return what to call: the model, or its
        DistributedDataParallel wrapper when there are several processes (its ``.module``
        is the model)."""
        if not isinstance(model, nn.Module):
            raise TypeError(f"model(): expected a torch.nn.Module, got {type(model).__name__}")
        model.to(self.device)
        wrapped = model
        if self.world > 1 and any(p.requires_grad for p in model.parameters()):
            ids = [self.device.index] if self.device.type == "cuda" else None
            wrapped = nn.parallel.DistributedDataParallel(model, device_ids=ids)
        self.models.append(model)
        model.train()
        return wrapped

    def optimizer(self, optimizer: torch.optim.Optimizer) -> torch.optim.Optimizer:
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise TypeError(
                f"optimizer(): expected a torch.optim.Optimizer, got {type(optimizer).__name__}"
            )
        self.optimizers.append(optimizer)
        return optimizer

    def lr_scheduler(self, scheduler: Any) -> Any:
        """Checkpointed with the rest; stepping it is the trial's."""
        _check_stateful("lr_scheduler()", scheduler)
        self.lr_schedulers.append(scheduler)
        return scheduler

    def stateful(self, obj: Any) -> Any:
        """Any other object with ``state_dict``/``load_state_dict`` to checkpoint (its state
        holds tensors, numbers, strings, lists and dicts only)."""
        _check_stateful("stateful()", obj)
        self.extras.append(obj)
        return obj

    def backward(self, loss: torch.Tensor, **kwargs: Any) -> None:
        loss.backward(**kwargs)

    def step(
        self,
        optimizer: torch.optim.Optimizer,
        *,
        clip_grads: Callable[[Iterable[torch.Tensor]], Any] | None = None,
        zero_grad: bool = True,
    ) -> None:
        """``clip_grads(params)`` if given, ``optimizer.step()``, then zero its gradients."""
        if clip_grads is not None:
            clip_grads(p for group in optimizer.param_groups for p in group["params"])
        optimizer.step()
        if zero_grad:
            optimizer.zero_grad(set_to_none=True)

    def request_stop(self) -> None:
        """End the training after this batch, with a checkpoint, as a searcher's stop does.
        One rank's request ends every rank's training (the ranks agree on it each step)."""
        self.stop_requested = True


def _check_stateful(method: str, obj: Any) -> None:
    if not (hasattr(obj, "state_dict") and hasattr(obj, "load_state_dict")):
        raise TypeError(
            f"{method}: expected an object with state_dict() and load_state_dict(), got "
            f"{type(obj).__name__}"
        )


class ManualTrial(abc.ABC):
    """A trial that optimizes by hand. ``setup`` builds and registers its models and
    optimizers; ``train_batch`` calls ``opt.backward(loss)`` and ``opt.step(optimizer)``
    itself and returns its metrics. Give ``Trainer`` one in place of a ``Trial``."""

    def __init__(self, ctx: Any = None) -> None:
        self.ctx = ctx

    @abc.abstractmethod
    def setup(self, opt: ManualOptimization) -> None:
        """Build the models, optimizers and schedulers; register each with ``opt`` (keep
        what ``opt.model`` returns: that is the model to call)."""

    @abc.abstractmethod
    def build_training_data_loader(self) -> DataLoader:
        """As ``Trial``'s: sharded across processes and resumed mid-epoch by the Trainer."""

    @abc.abstractmethod
    def build_validation_data_loader(self) -> DataLoader:
        """As ``Trial``'s."""

    @abc.abstractmethod
    def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int) -> Mapping[str, Any]:
        """Train on one batch (on the device): backward and step. Return its metrics
        (numbers or one-element tensors), averaged over each reporting period.
        ``batch_idx`` counts the batches trained before this one, over all epochs."""

    def evaluate_batch(self, batch: Any, batch_idx: int) -> Mapping[str, Any]:
        """Metrics of one validation batch, averaged over the validation set weighted by
        batch size, as ``Trial``'s. Define this or ``evaluate_full_dataset``."""
        raise NotImplementedError

    def evaluate_full_dataset(self, data_loader: DataLoader) -> Mapping[str, Any]:
        """The validation metrics from the whole (unsharded) validation loader, computed by
        the chief alone; the other processes wait for them."""
        raise NotImplementedError

    def on_epoch_end(self, epoch_idx: int) -> None:
        """After the last batch of each epoch, before any checkpoint or validation there."""
        return None  # optional: nothing to do by default


def _defines(trial: ManualTrial, name: str) -> bool:
    """Whether ``trial`` has its own ``name`` (an instance may set one to None: not defined)."""
    method = getattr(trial, name, None)
    return method is not None and getattr(method, "__func__", None) is not getattr(
        ManualTrial, name
    )


def evaluates_full_dataset(trial: ManualTrial) -> bool:
    full = _defines(trial, "evaluate_full_dataset")
    if full == _defines(trial, "evaluate_batch"):
        raise TypeError(
            f"{type(trial).__name__} must define exactly one of evaluate_batch() and "
            "evaluate_full_dataset() (evaluate_batch runs on every process's share of the data)"
        )
    return full
