"""PyTorchTrialContext: what a PyTorchTrial's ``__init__`` receives (Determined's API),
over the Trainer's ManualOptimization and the shipyard.core context."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch import nn

from shipyard.common.errors import NotSupportedYet
from shipyard.integrations.determined_trial._data import to_device
from shipyard.integrations.determined_trial._distributed import TrialDistributed
from shipyard.integrations.determined_trial._lr import LRScheduler
from shipyard.integrations.torch import ManualOptimization


def _not_yet(what: str, hint: str) -> NotSupportedYet:
    return NotSupportedYet(f"PyTorchTrialContext.{what} is not supported by Shipyard yet: {hint}")


class _Experimental:
    """``context.experimental``: the switches Shipyard honours (the others raise)."""

    def __init__(self, opt: ManualOptimization) -> None:
        self._opt = opt

    def disable_dataset_reproducibility_checks(self) -> None:
        """Shipyard takes torch DataLoaders as they are: nothing to disable."""

    @property
    def auto_to_device(self) -> bool:
        return self._opt.auto_to_device

    def disable_auto_to_device(self) -> None:
        """train_batch and evaluate_batch get the batches as the loader gives them (on the
        CPU): move them with context.to_device yourself."""
        self._opt.auto_to_device = False

    def use_amp(self) -> None:
        raise _not_yet("experimental.use_amp()", "call torch.autocast in train_batch")


class PyTorchTrialContext:
    def __init__(
        self,
        *,
        core: Any,
        opt: ManualOptimization,
        hparams: dict[str, Any],
        global_batch_size: int | None,
        experiment_config: dict[str, Any],
    ) -> None:
        self._core = core
        self._opt = opt
        self._hparams = hparams
        self._global_batch_size = global_batch_size
        self._exp_conf = experiment_config
        self.distributed = TrialDistributed(
            rank=opt.rank, size=opt.world, local_rank=opt.local_rank
        )
        self.device = opt.device
        self.experimental = _Experimental(opt)
        self.models: list[nn.Module] = []
        self.optimizers: list[torch.optim.Optimizer] = []
        self.lr_schedulers: list[LRScheduler] = []
        self._stop_requested = False
        # The runner keeps these current (current_train_batch() and friends).
        self._batch_idx = 0
        self._epoch_idx = 0

    # ------------------------------------------------------------ wrapping
    def wrap_model(self, model: nn.Module) -> nn.Module:
        """The model on the trial's device; DistributedDataParallel-wrapped when the trial
        has several processes (call it; its ``.module`` is your model)."""
        wrapped = self._opt.model(model)
        self.models.append(wrapped)
        return wrapped

    def wrap_optimizer(
        self,
        optimizer: torch.optim.Optimizer,
        backward_passes_per_step: int = 1,
        fp16_compression: bool | None = None,
        average_aggregated_gradients: bool | None = None,
    ) -> torch.optim.Optimizer:
        if backward_passes_per_step != 1:
            raise _not_yet(
                "wrap_optimizer(backward_passes_per_step > 1)",
                "call step_optimizer every N batches yourself",
            )
        self.optimizers.append(self._opt.optimizer(optimizer))
        return optimizer

    def wrap_lr_scheduler(
        self, lr_scheduler: Any, step_mode: LRScheduler.StepMode, frequency: int = 1
    ) -> Any:
        """Checkpointed with the trial, and stepped by the runner per ``step_mode``. Returns
        ``lr_scheduler`` itself."""
        if (
            isinstance(lr_scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau)
            and step_mode != LRScheduler.StepMode.MANUAL_STEP
        ):
            raise ValueError(
                "wrap_lr_scheduler(): ReduceLROnPlateau steps on a metric, so it needs "
                "step_mode=LRScheduler.StepMode.MANUAL_STEP"
            )
        optimizer = getattr(lr_scheduler, "optimizer", None)
        if optimizer is not None and all(optimizer is not o for o in self.optimizers):
            raise ValueError(
                "wrap_lr_scheduler(): the scheduler's optimizer must be one returned by "
                "wrap_optimizer()"
            )
        wrapped = LRScheduler(lr_scheduler, step_mode, frequency)
        self._opt.lr_scheduler(lr_scheduler)
        self.lr_schedulers.append(wrapped)
        return lr_scheduler

    # ------------------------------------------------------------ training
    def backward(
        self,
        loss: torch.Tensor,
        gradient: torch.Tensor | None = None,
        retain_graph: bool = False,
        create_graph: bool = False,
    ) -> None:
        self._opt.backward(
            loss, gradient=gradient, retain_graph=retain_graph, create_graph=create_graph
        )

    def step_optimizer(
        self,
        optimizer: torch.optim.Optimizer,
        clip_grads: Callable[[Iterable[torch.Tensor]], None] | None = None,
        auto_zero_grads: bool = True,
        scaler: Any = None,
    ) -> None:
        if scaler is not None:
            raise _not_yet("step_optimizer(scaler=...)", "AMP with a GradScaler is not wired yet")
        self._opt.step(optimizer, clip_grads=clip_grads, zero_grad=auto_zero_grads)

    def to_device(self, data: Any) -> Any:
        return to_device(data, self.device)

    def get_stop_requested(self) -> bool:
        return self._stop_requested

    def set_stop_requested(self, stop_requested: bool) -> None:
        """True: the runner finishes this batch, checkpoints, and ends the trial."""
        if not isinstance(stop_requested, bool):
            raise TypeError("set_stop_requested() takes a bool")
        self._stop_requested = stop_requested
        if stop_requested:
            self._opt.request_stop()

    # ------------------------------------------------------------ facts
    def get_hparams(self) -> dict[str, Any]:
        return self._hparams

    def get_hparam(self, name: str) -> Any:
        if name not in self._hparams:
            raise ValueError(
                f"no hyperparameter {name!r} in the experiment config's hyperparameters "
                f"(it has {sorted(self._hparams)})"
            )
        return self._hparams[name]

    def get_global_batch_size(self) -> int:
        if self._global_batch_size is None:
            raise ValueError(
                "the experiment config has no hyperparameters.global_batch_size: add it (the "
                "batch size over all slots)"
            )
        return self._global_batch_size

    def get_per_slot_batch_size(self) -> int:
        """The global batch size divided among the trial's processes."""
        size = self.distributed.size
        per_slot = self.get_global_batch_size() // size
        if per_slot < 1:
            raise ValueError(
                f"global_batch_size {self._global_batch_size} is smaller than the trial's "
                f"{size} processes"
            )
        return per_slot

    def get_experiment_config(self) -> dict[str, Any]:
        return self._exp_conf

    def get_data_config(self) -> dict[str, Any]:
        return dict(self._exp_conf.get("data") or {})

    def get_experiment_id(self) -> int:
        return int(self._core.info.experiment_id or 0)

    def get_trial_id(self) -> int:
        return int(self._core.info.trial_id or 0)

    def get_trial_seed(self) -> int:
        return int(self._core.info.trial_seed or 0)

    def get_initial_batch(self) -> int:
        """The batches trained before this run (from the checkpoint it resumed). Known once
        the checkpoint is restored, after the data loaders are built: 0 before."""
        return self._opt.initial_batch

    def current_train_batch(self) -> int:
        return self._batch_idx

    def current_train_epoch(self) -> int:
        return self._epoch_idx

    def is_epoch_start(self) -> bool:
        per_epoch = self._opt.batches_per_epoch  # this process's share of the loader
        return bool(per_epoch) and self._batch_idx % (per_epoch or 1) == 0

    def is_epoch_end(self) -> bool:
        per_epoch = self._opt.batches_per_epoch
        return bool(per_epoch) and (self._batch_idx + 1) % (per_epoch or 1) == 0

    # ------------------------------------------------------------ not yet
    def wrap_scaler(self, scaler: Any) -> Any:
        raise _not_yet("wrap_scaler()", "AMP with a GradScaler is not wired yet")

    def configure_apex_amp(self, *args: Any, **kwargs: Any) -> Any:
        raise _not_yet("configure_apex_amp()", "use torch.autocast")

    def autocast_forward_pass(self, model: nn.Module) -> nn.Module:
        raise _not_yet("autocast_forward_pass()", "use torch.autocast in train_batch")

    def get_tensorboard_writer(self) -> Any:
        raise _not_yet("get_tensorboard_writer()", "report metrics from train_batch")

    def get_tensorboard_path(self) -> Any:
        raise _not_yet("get_tensorboard_path()", "report metrics from train_batch")

    def set_profiler(self, *args: Any, **kwargs: Any) -> None:
        raise _not_yet("set_profiler()", "profile with torch.profiler in your own code")
