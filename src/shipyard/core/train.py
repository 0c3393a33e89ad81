"""ctx.train: reporting metrics and progress, asynchronously and in batches."""

from __future__ import annotations

import math
import numbers
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from shipyard.common.metric_groups import TRAINING, VALIDATION, is_group, refusal
from shipyard.core._columns import as_columns
from shipyard.core._report_queue import ReportQueue
from shipyard.core._retry import request_with_retry
from shipyard.core._tensorboard import TensorBoard, directory_of

if TYPE_CHECKING:
    from shipyard.core._http import JsonHttp  # http.client is imported only with a master


class TrainContext(Protocol):
    def report_training_metrics(self, steps_completed: int, metrics: Mapping[str, Any]) -> None:
        """Queue training metrics measured after ``steps_completed`` steps; returns at once."""
        ...

    def report_validation_metrics(self, steps_completed: int, metrics: Mapping[str, Any]) -> None:
        """Queue validation metrics; the searcher acts on its metric from these."""
        ...

    def report_metrics(self, group: str, steps_completed: int, metrics: Mapping[str, Any]) -> None:
        """Queue metrics of any group (a letter, then up to 31 letters, digits, _ . -).
        "validation" is report_validation_metrics, "training" report_training_metrics; any
        other group is stored and charted alike, and the searcher does not read it."""
        ...

    def report_progress(self, fraction: float) -> None:
        """Queue how far the trial is, from 0.0 to 1.0."""
        ...

    def flush(self, timeout_s: float = ...) -> None:
        """Wait until everything reported so far is delivered."""
        ...

    def get_tensorboard_path(self) -> Path:
        """This rank's TensorBoard directory (created): ``tensorboard/`` in the working
        directory, ``tensorboard/rank-<n>/`` for rank n. Its files are kept in the checkpoint
        storage, beside the scalars of Shipyard's own metrics."""
        ...

    def close(self, timeout_s: float = ...) -> None: ...


# At exit, wait for the sender's retry window (60 s) plus a margin, no longer.
DEFAULT_FLUSH_TIMEOUT_S = 90.0


class _QueuedTrain(ReportQueue):
    """Validation on the calling thread, delivery on the sender thread."""

    # Set by make_context; the sender thread writes delivered reports as TensorBoard scalars.
    tensorboard: TensorBoard | None = None

    def report_training_metrics(self, steps_completed: int, metrics: Mapping[str, Any]) -> None:
        self.enqueue_report(make_report(TRAINING, steps_completed, metrics))

    def report_validation_metrics(self, steps_completed: int, metrics: Mapping[str, Any]) -> None:
        self.enqueue_report(make_report(VALIDATION, steps_completed, metrics))

    def report_metrics(self, group: str, steps_completed: int, metrics: Mapping[str, Any]) -> None:
        # Checked here, on the calling thread: the master would refuse the whole batch.
        self.enqueue_report(make_report(check_group(group), steps_completed, metrics))

    def report_progress(self, fraction: float) -> None:
        self.enqueue_progress(check_progress(fraction))

    def flush(self, timeout_s: float = DEFAULT_FLUSH_TIMEOUT_S) -> None:
        super().flush(timeout_s)

    def get_tensorboard_path(self) -> Path:
        if self.tensorboard is None:
            self.tensorboard = TensorBoard(directory_of(os.getcwd(), 0))
        return self.tensorboard.path()

    def close(self, timeout_s: float = DEFAULT_FLUSH_TIMEOUT_S) -> None:
        super().close(timeout_s)


class LocalTrain(_QueuedTrain):
    """No master: each report becomes one line on stdout, e.g.
    ``[shipyard] training steps=10 loss=0.1234``."""

    thread_name = "shipyard-metric-printer"

    def deliver(self, reports: list[dict[str, Any]], progress: float | None) -> None:
        lines = [format_report(report) for report in reports]
        if progress is not None:
            lines.append(f"[shipyard] progress {progress * 100:.1f}%")
        sys.stdout.write("".join(line + "\n" for line in lines))
        sys.stdout.flush()
        if self.tensorboard is not None:  # only with SHIPYARD_TENSORBOARD=1 in local mode
            self.tensorboard.write(reports)


class MasterTrain(_QueuedTrain):
    """Sends each batch to the master; retries while it is unreachable (it may be restarting)."""

    thread_name = "shipyard-metric-sender"
    min_interval_s = 0.2  # at most ~5 requests a second per trial, however fast it reports

    def __init__(self, http: JsonHttp, trial_id: int, run_id: int) -> None:
        super().__init__()
        self._http = http
        self._trial_id = trial_id
        self._run_id = run_id

    def deliver(self, reports: list[dict[str, Any]], progress: float | None) -> None:
        base = f"/api/v1/trials/{self._trial_id}"
        if reports:
            body = {"run_id": self._run_id, "columns": as_columns(reports)}
            request_with_retry(self._http, "POST", f"{base}/metrics", body)
            if self.tensorboard is not None:  # what the master has, as TensorBoard scalars
                self.tensorboard.write(reports)
        if progress is not None:
            body = {"run_id": self._run_id, "progress": progress}
            request_with_retry(self._http, "POST", f"{base}/progress", body)


def check_progress(fraction: Any) -> float:
    """A progress value, checked: a number from 0 to 1."""
    if isinstance(fraction, bool) or not isinstance(fraction, numbers.Real):
        raise TypeError(f"progress must be a number, got {type(fraction).__name__}")
    value = float(fraction)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"progress must be between 0 and 1, got {value}")
    return value


def check_group(group: Any) -> str:
    """A metric group, checked with the master's rule (shipyard.common.metric_groups)."""
    if not is_group(group):
        raise (ValueError if isinstance(group, str) else TypeError)(refusal(group))
    return group


def make_report(group: str, steps_completed: int, metrics: Mapping[str, Any]) -> dict[str, Any]:
    """Check a report and copy it into the wire shape (the caller may reuse its dict).
    Runs on the training thread at every report: plain int/float/dict take a fast path
    (the ABC isinstance checks cost microseconds each)."""
    if type(steps_completed) is int and steps_completed >= 0 and type(metrics) is dict:
        clean = {}
        for name, value in metrics.items():
            kind = type(value)
            if (kind is float or kind is int) and type(name) is str and name:
                clean[name] = value
            else:
                return _make_report_checked(group, steps_completed, metrics)
        return {"group": group, "steps_completed": steps_completed, "metrics": clean}
    return _make_report_checked(group, steps_completed, metrics)


def _make_report_checked(
    group: str, steps_completed: int, metrics: Mapping[str, Any]
) -> dict[str, Any]:
    if isinstance(steps_completed, bool) or not isinstance(steps_completed, numbers.Integral):
        raise TypeError(
            f"steps_completed must be an int, got {type(steps_completed).__name__} "
            f"{steps_completed!r} (in the {group} report)"
        )
    if steps_completed < 0:
        raise ValueError(f"steps_completed must be >= 0, got {steps_completed} ({group} report)")
    if not isinstance(metrics, Mapping):
        raise TypeError(
            f"{group} metrics must be a dict of name -> number, got {type(metrics).__name__}"
        )
    clean: dict[str, Any] = {}
    for name, value in metrics.items():
        if not isinstance(name, str) or not name:
            raise TypeError(f"{group} metric names must be non-empty strings, got {name!r}")
        if isinstance(value, bool):
            clean[name] = value
        elif isinstance(value, numbers.Integral):
            clean[name] = int(value)
        elif isinstance(value, numbers.Real):
            clean[name] = float(value)  # numpy scalars become plain floats for JSON
        else:
            hint = (
                " (call .item() on a one-element tensor or array)" if hasattr(value, "item") else ""
            )
            raise TypeError(
                f"{group} metric {name!r} must be a number (int, float or bool), "
                f"got {type(value).__name__}: {value!r:.80}{hint}"
            )
    return {"group": group, "steps_completed": int(steps_completed), "metrics": clean}


def format_report(report: dict[str, Any]) -> str:
    parts = [f"[shipyard] {report['group']} steps={report['steps_completed']}"]
    for name, value in report["metrics"].items():
        if isinstance(value, float) and math.isfinite(value):
            parts.append(f"{name}={value:.6g}")
        else:
            parts.append(f"{name}={value}")
    return " ".join(parts)
