"""The user's PyTorchTrial as a ManualTrial of Shipyard's Trainer: the Trainer owns the
data, periods, reports and checkpoints; this class calls the user's methods the way
Determined's harness does and steps the wrapped LR schedulers."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

import torch

from shipyard.common.errors import NotSupportedYet
from shipyard.integrations.determined_trial._context import PyTorchTrialContext
from shipyard.integrations.determined_trial._data import torch_loader
from shipyard.integrations.torch import ManualOptimization, ManualTrial


class DeterminedTrial(ManualTrial):
    def __init__(
        self,
        ctx: Any,
        trial_class: type,
        *,
        global_batch_size: int | None,
        experiment_config: dict[str, Any],
    ) -> None:
        super().__init__(ctx)
        self._cls = trial_class
        self._name = trial_class.__name__
        self._global_batch_size = global_batch_size
        self._exp_conf = experiment_config
        self.user: Any = None
        self.context: PyTorchTrialContext | None = None
        # Which evaluate the user defined: this class offers the Trainer only that one.
        full = _overrides(trial_class, "evaluate_full_dataset")
        if full == _overrides(trial_class, "evaluate_batch"):
            raise TypeError(
                f"{self._name} must define exactly one of evaluate_batch() and "
                "evaluate_full_dataset() (evaluate_batch is recommended: every process "
                "evaluates its share of the data)"
            )
        if full:
            self.evaluate_batch = None  # type: ignore[assignment,method-assign]
        else:
            self.evaluate_full_dataset = None  # type: ignore[assignment,method-assign]

    def setup(self, opt: ManualOptimization) -> None:
        self.context = PyTorchTrialContext(
            core=self.ctx,
            opt=opt,
            hparams=dict(self.ctx.info.hparams),
            global_batch_size=self._global_batch_size,
            experiment_config=self._exp_conf,
        )
        self.user = self._cls(self.context)
        callbacks = self.user.build_callbacks() if hasattr(self.user, "build_callbacks") else {}
        if callbacks:
            raise NotSupportedYet(
                f"{self._name}.build_callbacks() returned {sorted(callbacks)}: PyTorchCallback "
                "is not supported by Shipyard yet; step a ReduceLROnPlateau from train_batch, "
                "or remove the callbacks"
            )
        self._batch_idx_arg = _takes_batch_idx(self.user.evaluate_batch)

    def build_training_data_loader(self) -> Any:
        return torch_loader(
            self.user.build_training_data_loader(), f"{self._name}.build_training_data_loader"
        )

    def build_validation_data_loader(self) -> Any:
        return torch_loader(
            self.user.build_validation_data_loader(), f"{self._name}.build_validation_data_loader"
        )

    def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int) -> Mapping[str, Any]:
        context = self.context
        assert context is not None
        context._batch_idx, context._epoch_idx = batch_idx, epoch_idx
        out = self.user.train_batch(batch=batch, epoch_idx=epoch_idx, batch_idx=batch_idx)
        if isinstance(out, torch.Tensor):
            out = {"loss": out}
        for scheduler in context.lr_schedulers:
            scheduler.after_batch(batch_idx)
        return out  # type: ignore[no-any-return]

    def on_epoch_end(self, epoch_idx: int) -> None:
        assert self.context is not None
        for scheduler in self.context.lr_schedulers:
            scheduler.after_epoch(epoch_idx)

    def evaluate_batch(self, batch: Any, batch_idx: int) -> Mapping[str, Any]:
        if self._batch_idx_arg:
            return self.user.evaluate_batch(batch=batch, batch_idx=batch_idx)  # type: ignore[no-any-return]
        return self.user.evaluate_batch(batch=batch)  # type: ignore[no-any-return]

    def evaluate_full_dataset(self, data_loader: Any) -> Mapping[str, Any]:
        return self.user.evaluate_full_dataset(data_loader=data_loader)  # type: ignore[no-any-return]


def _overrides(cls: type, method: str) -> bool:
    """Whether ``cls`` defines ``method`` below any PyTorchTrial base (Shipyard's or, with
    the shim turned off, Determined's own)."""
    for klass in cls.__mro__:
        if klass.__name__ == "PyTorchTrial" or klass is object:
            return False
        if method in vars(klass):
            return True
    return False


def _takes_batch_idx(method: Any) -> bool:
    """Determined's evaluate_batch may leave out batch_idx."""
    try:
        return "batch_idx" in inspect.signature(method).parameters
    except (TypeError, ValueError):
        return True
