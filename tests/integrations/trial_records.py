"""What a trial in local mode reported (captured from a real ctx instead of printed) and
stored (its checkpoints in ./checkpoints)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class Reports:
    """``Reports(ctx)``: from then on, ``training`` and ``validation`` map each reported step
    to its metrics, and ``progress`` lists the fractions reported."""

    def __init__(self, ctx: Any) -> None:
        self.training: dict[int, dict[str, float]] = {}
        self.validation: dict[int, dict[str, float]] = {}
        self.progress: list[float] = []
        ctx.train.report_training_metrics = self._training
        ctx.train.report_validation_metrics = self._validation
        ctx.train.report_progress = self.progress.append

    def _training(self, steps_completed: int, metrics: dict[str, Any]) -> None:
        _merge(self.training, steps_completed, metrics)

    def _validation(self, steps_completed: int, metrics: dict[str, Any]) -> None:
        _merge(self.validation, steps_completed, metrics)


def _merge(reports: dict[int, dict[str, float]], step: int, metrics: dict[str, Any]) -> None:
    """Several reports of one step are fine; a metric reported twice at a step is not."""
    earlier = reports.setdefault(step, {})
    assert not earlier.keys() & metrics.keys(), f"step {step}: {sorted(metrics)} reported again"
    earlier.update(metrics)


def stored(tmp: Path) -> dict[int, dict[str, Any]]:
    """The metadata of the checkpoints in local storage by step, for a test of one run (it
    stores each step once)."""
    metadata = [json.loads(p.read_text()) for p in (tmp / "checkpoints").glob("*/metadata.json")]
    by_step = {m["steps_completed"]: m for m in metadata}
    assert len(by_step) == len(metadata), sorted(m["steps_completed"] for m in metadata)
    return by_step


def metadata_of(tmp: Path, uuid: str | None) -> dict[str, Any]:
    return json.loads((tmp / "checkpoints" / str(uuid) / "metadata.json").read_text())
