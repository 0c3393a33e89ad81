"""The SDK's experiment and trial objects: the API's models (every field of
ExperimentDetail, TrialDetail or TrialSummary, as fetched) with the calls Determined's
`client` users reach for: top_checkpoint, list_trials, wait, to_dataframe.

Their fields are a snapshot of when they were fetched; `reload()` fetches them again, and
`wait()` refreshes the experiment it is called on.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import PrivateAttr

from shipyard.client import checkpoints, experiments, trials
from shipyard.client.session import Session
from shipyard.common.api import CheckpointInfo, ExperimentDetail, TrialDetail, TrialSummary
from shipyard.common.errors import InvalidRequest

if TYPE_CHECKING:
    import pandas

Order = Literal["asc", "desc"]
# What list_trials sorts by: TrialSummary's fields (Determined's TrialSortBy, by our names).
TRIAL_SORT_KEYS = (
    "id",
    "state",
    "started_at",
    "ended_at",
    "best_validation",
    "latest_validation",
    "steps_completed",
    "restarts",
)


class _TrialCalls:
    """What a trial object does, whether it came from a list (TrialRef) or alone (Trial)."""

    id: int
    experiment_id: int
    _session: Session

    def checkpoints(self) -> list[CheckpointInfo]:
        """Its checkpoints, by step."""
        return checkpoints.list_trial_checkpoints(self._session, self.id)

    def top_checkpoint(
        self, sort_by: str | None = None, smaller_is_better: bool | None = None
    ) -> CheckpointInfo | None:
        """Its best checkpoint by the validation metric `sort_by` at the checkpoint's step
        (by default the searcher's metric, and its direction); the latest when none of
        them was validated; None when it has none."""
        return _top(
            self._session, self.checkpoints(), self.experiment_id, sort_by, smaller_is_better
        )


class TrialRef(_TrialCalls, TrialSummary):
    """A trial as an experiment's list has it (Experiment.list_trials)."""

    _session: Session = PrivateAttr()

    def detail(self) -> Trial:
        """Everything about it (its metrics' summaries, runs, last log lines)."""
        return Trial.fetch(self._session, self.id)


class Trial(_TrialCalls, TrialDetail):
    """One trial with everything `trial describe` shows (Shipyard.trial / get_trial)."""

    _session: Session = PrivateAttr()

    @classmethod
    def fetch(cls, session: Session, trial_id: int) -> Trial:
        return _bound(cls, trials.get_trial(session, trial_id), session)

    def reload(self) -> Trial:
        return Trial.fetch(self._session, self.id)


class Experiment(ExperimentDetail):
    """One experiment with its trials (Shipyard.get_experiment / create_experiment)."""

    _session: Session = PrivateAttr()

    @classmethod
    def fetch(cls, session: Session, experiment_id: int) -> Experiment:
        return _bound(cls, experiments.get_experiment(session, experiment_id), session)

    def reload(self) -> Experiment:
        return Experiment.fetch(self._session, self.id)

    def wait(self, timeout: float | None = None, interval: float = 1.0) -> Experiment:
        """Block until it ends (COMPLETED, CANCELED or ERRORED); its fields are then the
        final ones (this object is refreshed, and returned). ShipyardError after
        `timeout` seconds."""
        final = experiments.wait_for_experiment(
            self._session, self.id, timeout_s=timeout, poll_s=interval
        )
        for field in type(final).model_fields:
            setattr(self, field, getattr(final, field))
        return self

    def list_trials(self, sort_by: str = "id", order: Order = "asc") -> list[TrialRef]:
        """Its trials, fetched now, sorted by one of TRIAL_SORT_KEYS (trials without a
        value, e.g. no validation yet, come last either way)."""
        if sort_by not in TRIAL_SORT_KEYS:
            raise InvalidRequest(
                f"list_trials: sort_by must be one of {', '.join(TRIAL_SORT_KEYS)}; got {sort_by!r}"
            )
        if order not in ("asc", "desc"):
            raise InvalidRequest(f"list_trials: order must be 'asc' or 'desc'; got {order!r}")
        found = [
            _bound(TrialRef, t, self._session)
            for t in experiments.list_experiment_trials(self._session, self.id)
        ]
        return _sorted(found, lambda t: getattr(t, sort_by), descending=order == "desc")

    def checkpoints(self) -> list[CheckpointInfo]:
        return checkpoints.list_checkpoints(self._session, self.id)

    def top_checkpoint(
        self, sort_by: str | None = None, smaller_is_better: bool | None = None
    ) -> CheckpointInfo | None:
        """The best checkpoint of all its trials by the validation metric `sort_by` at
        the checkpoint's step (by default the searcher's metric and direction); the latest
        when none was validated; None when it has none."""
        if sort_by == self.metric:
            sort_by = None  # each checkpoint carries the searcher metric's value
        if smaller_is_better is None and sort_by is None:
            smaller_is_better = self.smaller_is_better
        return _top(self._session, self.checkpoints(), self.id, sort_by, smaller_is_better)

    def to_dataframe(self) -> pandas.DataFrame:
        """One row per trial (as Ray Tune's get_dataframe()): trial_id, state,
        steps_completed, restarts, started_at, ended_at, best_validation and
        latest_validation (the searcher metric), a column per hyperparameter
        (`hparams.NAME`, nested ones by dots), and per metric the last value
        (`validation.NAME`, `training.NAME`) and for validation metrics the best
        (`validation.NAME.best`). Needs pandas (pip install 'shipyard[pandas]')."""
        try:
            import pandas
        except ImportError as exc:
            raise ImportError(
                "Experiment.to_dataframe() needs pandas, which is not installed: "
                "pip install 'shipyard[pandas]' (or pandas)"
            ) from exc
        rows = []
        for summary in experiments.list_experiment_trials(self._session, self.id):
            detail = trials.get_trial(self._session, summary.id)
            row: dict[str, Any] = {
                "trial_id": detail.id,
                "state": str(detail.state),
                "steps_completed": detail.steps_completed,
                "restarts": detail.restarts,
                "started_at": detail.started_at,
                "ended_at": detail.ended_at,
                "best_validation": detail.best_validation,
                "latest_validation": detail.latest_validation,
            }
            row.update(_flat("hparams", detail.hparams))
            for metric in detail.metrics:
                row[f"{metric.group}.{metric.name}"] = metric.last
                if metric.group == "validation":
                    row[f"{metric.group}.{metric.name}.best"] = metric.best
            rows.append(row)
        columns = list(dict.fromkeys(key for row in rows for key in row))
        return pandas.DataFrame(rows, columns=columns or ["trial_id"])


def _bound(cls, model, session: Session):
    """`model`'s fields as a `cls` that calls the master through `session`."""
    obj = cls.model_validate(model.model_dump())
    obj._session = session
    return obj


def _flat(prefix: str, value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(_flat(f"{prefix}.{key}", item))
        return out
    return {prefix: value}


def _sorted(items: list, key: Callable[[Any], Any], *, descending: bool) -> list:
    """Sorted by key, those whose key is None (or NaN) last in either order."""
    present = [i for i in items if not _missing(key(i))]
    absent = [i for i in items if _missing(key(i))]
    present.sort(key=lambda i: _comparable(key(i)), reverse=descending)
    return present + absent


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _comparable(value: Any) -> Any:
    return value.timestamp() if isinstance(value, datetime) else value


def _top(
    session: Session,
    ckpts: list[CheckpointInfo],
    experiment_id: int,
    sort_by: str | None,
    smaller_is_better: bool | None,
) -> CheckpointInfo | None:
    if not ckpts:
        return None
    if smaller_is_better is None or sort_by is not None:  # else the summary says nothing new
        exp = experiments.get_experiment_summary(session, experiment_id)
        if smaller_is_better is None:  # the searcher's direction, as Determined's default
            smaller_is_better = exp.smaller_is_better
        if sort_by == exp.metric:
            sort_by = None  # the searcher metric: each checkpoint carries its value
    if sort_by is None:
        values = {c.uuid: c.validation for c in ckpts}
    else:
        values = _values_at(session, ckpts, sort_by)
    scored: dict[str, float] = {}
    for c in ckpts:
        value = values.get(c.uuid)
        if value is not None and not _missing(value):
            scored[c.uuid] = float(value)
    if not scored:
        return max(ckpts, key=lambda c: (c.steps_completed, c.created_at))
    sign = 1 if smaller_is_better else -1
    candidates = [c for c in ckpts if c.uuid in scored]
    return min(candidates, key=lambda c: (sign * scored[c.uuid], -c.steps_completed))


def _values_at(session: Session, ckpts: list[CheckpointInfo], name: str) -> dict[str, Any]:
    """Each checkpoint's value of the validation metric `name` at its step."""
    values: dict[str, Any] = {}
    for trial_id in {c.trial_id for c in ckpts}:
        series = trials.get_trial_metrics(session, trial_id, group="validation", name=name)
        at = {p.steps_completed: p.value for s in series for p in s.points}
        for c in ckpts:
            if c.trial_id == trial_id:
                values[c.uuid] = at.get(c.steps_completed)
    return values
