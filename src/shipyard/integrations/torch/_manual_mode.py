"""The Trainer's manual-optimization mode: a ManualTrial's setup, step, validation and
checkpointed objects (a mixin of Trainer, kept apart from the automatic loop)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from shipyard.integrations.torch._data import to_device
from shipyard.integrations.torch._manual import (
    ManualOptimization,
    ManualTrial,
    evaluates_full_dataset,
)
from shipyard.integrations.torch._metrics import full_dataset_metrics, validation_means


class ManualMode:
    """Trainer's methods for a ManualTrial; they use the Trainer's state (``self.trial``,
    ``self._ranks``, ``self._data``, ...)."""

    manual: ManualOptimization | None
    trial: Any
    _name: str
    _ranks: Any
    _data: Any
    _iter: Any
    _train_records: dict[str, list[Any]]
    device: torch.device
    model: Any
    steps_completed: int
    _epoch: int
    _batch_in_epoch: int
    _batches_trained: int
    _stop: bool
    _optimizer: Any
    _scheduler: Any
    _scaler: Any
    _full_dataset: bool
    _full_val_loader: Any
    _val_loader: Any

    def _poll_signals(self) -> None:
        raise NotImplementedError  # the Trainer's

    def _setup_manual(self) -> None:
        """The trial builds and registers its models and optimizers (DDP-wrapped by
        ``opt.model`` when distributed, so before the checkpoint is restored into them)."""
        assert isinstance(self.trial, ManualTrial)
        ranks = self._ranks
        opt = ManualOptimization(
            device=self.device, rank=ranks.rank, world=ranks.world, local_rank=ranks.local_rank
        )
        self.manual = opt
        self.trial.setup(opt)
        if not opt.models or not opt.optimizers:
            raise ValueError(
                f"{self._name}.setup() must register at least one model (opt.model) and one "
                "optimizer (opt.optimizer)"
            )
        self._full_dataset = evaluates_full_dataset(self.trial)
        self.model, self._optimizer = opt.models[0], opt.optimizers[0]
        self._scheduler = None

    def _manual_step(self, batch: Any) -> None:
        """One data-loader batch of a ManualTrial: its train_batch steps the optimizers."""
        assert isinstance(self.trial, ManualTrial) and self.manual is not None
        if self.manual.auto_to_device and self.device.type != "cpu":
            batch = to_device(batch, self.device)
        out = self.trial.train_batch(batch, self._epoch, self._batches_trained)
        if not isinstance(out, Mapping):
            raise TypeError(
                f"{self._name}.train_batch() must return a dict of metrics, got "
                f"{type(out).__name__}"
            )
        self._record(out)
        self._batches_trained += 1
        self._batch_in_epoch += 1
        self.steps_completed += 1
        self._end_epoch_if_done()
        self._poll_signals()  # also shares the trial's stop request among the ranks

    def _record(self, out: Mapping[str, Any]) -> None:
        """Keep one batch's training metrics (detached) for the next training report."""
        records = self._train_records
        for key, value in out.items():
            if isinstance(value, torch.Tensor):
                value = value.detach()
            if key in records:
                records[key].append(value)
            else:
                records[key] = [value]

    def _end_epoch_if_done(self) -> None:
        """After the epoch's last batch: a ManualTrial's on_epoch_end, then the next epoch."""
        if self._batch_in_epoch != self._data.batches_per_epoch:
            return
        if self.manual is not None:
            self.trial.on_epoch_end(self._epoch)
        self._iter = None
        self._epoch += 1
        self._batch_in_epoch = 0

    def _validate_manual(self) -> dict[str, float]:
        assert isinstance(self.trial, ManualTrial) and self.manual is not None
        trial, models, ranks = self.trial, self.manual.models, self._ranks
        if self._full_dataset:
            return full_dataset_metrics(
                trial.evaluate_full_dataset,
                models,
                self._full_val_loader,
                chief=ranks.chief,
                world=ranks.world,
                name=self._name,
            )
        return validation_means(
            trial.evaluate_batch,
            models,
            self._val_loader,
            device=self.device,
            amp_dtype=None,
            world=ranks.world,
            name=self._name,
            with_index=True,
            move_batches=self.manual.auto_to_device,
        )

    def _stateful(self) -> dict[str, Any]:
        """What a checkpoint holds besides the trainer's own state."""
        opt = self.manual
        if opt is None:
            return {
                "models": self.model,
                "optimizers": self._optimizer,
                "schedulers": self._scheduler,
                "scalers": self._scaler,
            }
        return {
            "models": opt.models,
            "optimizers": opt.optimizers,
            "schedulers": opt.lr_schedulers,
            "extras": opt.extras,
        }
