"""core_context.train: Determined's metric reporting on Shipyard's ctx.train."""

from __future__ import annotations

import enum
import os
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
        """Shipyard keeps two groups, "training" and "validation"."""
        if group == TRAINING:
            self.report_training_metrics(steps_completed, metrics)
        elif group == VALIDATION:
            self.report_validation_metrics(steps_completed, metrics)
        else:
            raise not_supported(
                f"report_metrics(group={group!r})",
                'Shipyard stores the groups "training" and "validation" only',
            )

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
        """A directory for TensorBoard event files, kept in the trial's working directory
        (Shipyard does not upload them to checkpoint storage yet)."""
        trial = os.environ.get("SHIPYARD_TRIAL_ID", "local")
        path = pathlib.Path(os.getcwd(), "tensorboard", f"trial-{trial}")
        path.mkdir(parents=True, exist_ok=True)
        return path

    def upload_tensorboard_files(self, *args: Any, **kwargs: Any) -> None:
        raise not_supported("core_context.train.upload_tensorboard_files()")

    def get_experiment_best_validation(self) -> float | None:
        raise not_supported("core_context.train.get_experiment_best_validation()")

    def set_metadata(self, metadata: dict[str, Any]) -> None:
        raise not_supported("core_context.train.set_metadata()")

    def get_metadata(self) -> dict[str, Any] | None:
        raise not_supported("core_context.train.get_metadata()")
