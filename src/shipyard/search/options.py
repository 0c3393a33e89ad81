"""The searcher config fields every searcher here reads, checked once."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from shipyard.common.errors import ConfigError


def _config_error(field: str, message: str) -> ConfigError:
    path = f"searcher.{field}"
    return ConfigError(f"{path}: {message}", details=[{"path": path, "message": message}])


def _optional_name(searcher: dict[str, Any], field: str) -> str | None:
    value = searcher.get(field)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise _config_error(field, f"expected the name of a metric, got {value!r}")
    return value


def _optional_positive_int(searcher: dict[str, Any], field: str) -> int | None:
    value = searcher.get(field)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _config_error(field, f"expected a positive integer, got {value!r}")
    return value


@dataclass(frozen=True)
class SearcherOptions:
    """Determined's common searcher fields (the plain dict form of ExperimentConfig)."""

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
    def from_dict(cls, searcher: dict[str, Any]) -> SearcherOptions:
        if not isinstance(searcher, dict):
            raise ConfigError(f"searcher: expected a mapping, got {searcher!r}")
        metric = searcher.get("metric")
        if not isinstance(metric, str) or not metric:
            raise _config_error("metric", f"expected the name of a metric, got {metric!r}")
        smaller_is_better = searcher.get("smaller_is_better", True)
        if not isinstance(smaller_is_better, bool):
            raise _config_error(
                "smaller_is_better", f"expected true or false, got {smaller_is_better!r}"
            )
        concurrent = searcher.get("max_concurrent_trials") or 0
        if isinstance(concurrent, bool) or not isinstance(concurrent, int) or concurrent < 0:
            raise _config_error(
                "max_concurrent_trials", f"expected an integer >= 0, got {concurrent!r}"
            )
        return cls(
            name=str(searcher.get("name")),
            metric=metric,
            smaller_is_better=smaller_is_better,
            max_trials=_optional_positive_int(searcher, "max_trials"),
            max_concurrent_trials=concurrent,
            max_length=_optional_positive_int(searcher, "max_length"),
            time_metric=_optional_name(searcher, "time_metric"),
            max_time=_optional_positive_int(searcher, "max_time"),
            max_length_unit=searcher.get("max_length_unit") or None,
        )

    @property
    def length(self) -> int | None:
        """How long a trial trains at most, in the searcher's time unit."""
        return self.max_time if self.time_metric else self.max_length

    def require_length(self) -> int:
        if self.length is None:
            raise _config_error(
                "max_time",
                f"the {self.name} searcher needs max_time with time_metric, or max_length",
            )
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

    def require_max_trials(self) -> int:
        if self.max_trials is None:
            raise _config_error("max_trials", f"the {self.name} searcher needs max_trials")
        return self.max_trials
