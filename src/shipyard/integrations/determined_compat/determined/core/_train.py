"""core_context.train: Determined's metric reporting on Shipyard's ctx.train."""

from __future__ import annotations

import enum
import pathlib
from typing import Any

from .._errors import not_supported

TRAINING = "training"
VALIDATION = "validation"


class EarlyExitReason(enum.Enum):
    INVALID_HP = "EXITED_REASON_INVALID_HP"
    USER_REQUESTED_STOP = "EXITED_REASON_USER_REQUESTED_STOP"


class TrainContext:
    def __init__(self, inner: Any) -> None:
        self._inner = inner
        # What the last validation report held, for op.report_completed (_searcher.py).
        self.validations = 0
        self.validated_names: set[str] = set()

    def report_training_metrics(
        self,
        steps_completed: int,
        metrics: dict[str, Any],
        batch_metrics: list[dict[str, Any]] | None = None,
    ) -> None:
        if batch_metrics is not None:
            raise not_supported("report_training_metrics(batch_metrics=...)")
        self._inner.train.report_training_metrics(steps_completed, metrics)

    def report_validation_metrics(self, steps_completed: int, metrics: dict[str, Any]) -> None:
        self._inner.train.report_validation_metrics(steps_completed, metrics)
        self.validations += 1
        self.validated_names = set(metrics)

    def report_metrics(self, group: str, steps_completed: int, metrics: dict[str, Any]) -> None:
        """Any group Shipyard accepts (a letter, then up to 31 letters, digits, _ . -);
        "validation" goes through report_validation_metrics, for op.report_completed."""
        if group == TRAINING:
            self.report_training_metrics(steps_completed, metrics)
        elif group == VALIDATION:
            self.report_validation_metrics(steps_completed, metrics)
        else:
            self._inner.train.report_metrics(group, steps_completed, metrics)

    def report_progress(self, progress: float) -> None:
        self._inner.train.report_progress(progress)

    def report_early_exit(self, reason: EarlyExitReason) -> None:
        raise not_supported(
            "core_context.train.report_early_exit()",
            "raise an exception (the trial fails with its message) or exit 0",
        )

    def set_status(self, status: str) -> None:
        # Determined shows it in its UI; Shipyard shows the trial's output.
        print(f"[determined] status: {status}", flush=True)

    def get_tensorboard_path(self) -> pathlib.Path:
        """Shipyard's ctx.train.get_tensorboard_path(): ``tensorboard/`` in the trial's
        working directory (``tensorboard/rank-<n>/`` for rank n), copied to the checkpoint
        storage under ``tensorboard/experiment-<id>/trial-<id>/``."""
        path: pathlib.Path = self._inner.train.get_tensorboard_path()
        return path

    def upload_tensorboard_files(self, *args: Any, **kwargs: Any) -> None:
        raise not_supported("core_context.train.upload_tensorboard_files()")

    def get_experiment_best_validation(self) -> float | None:
        raise not_supported("core_context.train.get_experiment_best_validation()")

    def set_metadata(self, metadata: dict[str, Any]) -> None:
        raise not_supported("core_context.train.set_metadata()")

    def get_metadata(self) -> dict[str, Any] | None:
        raise not_supported("core_context.train.get_metadata()")
