"""The searcher fields every searcher here reads, as plain values taken from the validated
config model (common/config/searcher): the decisions read them on every validation."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from shipyard.common.config.searcher import BaseSearcher


@dataclass(frozen=True)
class SearcherOptions:
    """Determined's common searcher fields."""

    name: str
    metric: str
    smaller_is_better: bool = True
    max_trials: int | None = None
    max_concurrent_trials: int = 0  # 0 means no limit
    max_length: int | None = None
    # Determined's newer form: the trial reports `time_metric` (e.g. "batches") with its
    # validation metrics and trains up to max_time of it. Without it, time is steps_completed.
    time_metric: str | None = None
    max_time: int | None = None
    max_length_unit: str | None = None  # Determined's {batches: N} form: "batches"

    @classmethod
    def of(cls, config: BaseSearcher) -> SearcherOptions:
        length = config.max_length
        return cls(
            name=config.name,
            metric=config.metric,
            smaller_is_better=config.smaller_is_better,
            max_trials=getattr(config, "max_trials", None),
            max_concurrent_trials=config.max_concurrent_trials,
            max_length=length.value if length else None,
            time_metric=config.time_metric,
            max_time=config.max_time,
            max_length_unit=length.unit if length else None,
        )

    @property
    def length(self) -> int | None:
        """How long a trial trains at most, in the searcher's time unit."""
        return self.max_time if self.time_metric else self.max_length

    def require_length(self) -> int:
        """The length, for the searchers whose config requires one."""
        if self.length is None:
            raise ValueError(f"the {self.name} searcher was built without a training length")
        return self.length

    def time_of(self, metrics: dict[str, Any], steps_completed: int) -> float | None:
        """The trial's time for one validation: metrics[time_metric], else steps_completed.
        None when the time_metric is missing or not a finite number."""
        if not self.time_metric:
            return float(steps_completed)
        value = metrics.get(self.time_metric)
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        return float(value) if math.isfinite(value) else None

    def score_of(self, metrics: dict[str, Any]) -> float | None:
        """The searcher metric as a loss (smaller is better); None when missing, NaN or inf:
        the caller counts that as the worst value."""
        value = metrics.get(self.metric)
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            return None
        return float(value) if self.smaller_is_better else -float(value)
