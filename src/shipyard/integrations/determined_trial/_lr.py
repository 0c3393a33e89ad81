"""Determined's LRScheduler: a torch scheduler and when the runner steps it."""

from __future__ import annotations

import enum
from typing import Any


class LRScheduler:
    """``context.wrap_lr_scheduler(scheduler, step_mode)`` makes one. The runner steps the
    scheduler every ``frequency`` batches (``STEP_EVERY_BATCH``, and
    ``STEP_EVERY_OPTIMIZER_STEP``: each batch steps the optimizers once) or epochs
    (``STEP_EVERY_EPOCH``); with ``MANUAL_STEP`` the trial steps it."""

    class StepMode(enum.Enum):
        STEP_EVERY_EPOCH = 1
        STEP_EVERY_BATCH = 2
        MANUAL_STEP = 3
        STEP_EVERY_OPTIMIZER_STEP = 4

    def __init__(self, scheduler: Any, step_mode: StepMode, frequency: int = 1) -> None:
        if not isinstance(step_mode, LRScheduler.StepMode):
            raise TypeError(
                f"step_mode must be an LRScheduler.StepMode, got {type(step_mode).__name__}"
            )
        if isinstance(frequency, bool) or not isinstance(frequency, int) or frequency < 1:
            raise ValueError(f"frequency must be a positive int, got {frequency!r}")
        self._scheduler = scheduler
        self._step_mode = step_mode
        self._frequency = frequency
        self._per_batch = self._step_mode in (  # decided once: after_batch runs every batch
            LRScheduler.StepMode.STEP_EVERY_BATCH,
            LRScheduler.StepMode.STEP_EVERY_OPTIMIZER_STEP,
        )

    def step(self, *args: Any, **kwargs: Any) -> None:
        self._scheduler.step(*args, **kwargs)

    def get_last_lr(self) -> list[float]:
        return list(self._scheduler.get_last_lr())

    def state_dict(self) -> dict[str, Any]:
        return dict(self._scheduler.state_dict())

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._scheduler.load_state_dict(state)

    def after_batch(self, batch_idx: int) -> None:
        """Called once the batch ``batch_idx`` (0-based, over all epochs) is trained."""
        if self._per_batch and (batch_idx + 1) % self._frequency == 0:
            self._scheduler.step()

    def after_epoch(self, epoch_idx: int) -> None:
        if (
            self._step_mode == LRScheduler.StepMode.STEP_EVERY_EPOCH
            and (epoch_idx + 1) % self._frequency == 0
        ):
            self._scheduler.step()
