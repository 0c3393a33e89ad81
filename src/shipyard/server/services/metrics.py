"""Metric ingest and reads: points keyed by (trial, metric, step), summaries kept current."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

from sqlalchemy import case, select, update
from sqlalchemy.orm import Session

from shipyard.common import api
from shipyard.common.errors import Conflict, InvalidRequest, NotFound
from shipyard.common.metric_groups import VALIDATION, is_group, refusal
from shipyard.server import orm
from shipyard.server.orm import utcnow
from shipyard.server.services import metric_store

MAX_STEP = 2**63 - 1  # a BIGINT
MAX_NAME = 256  # metric_keys.name


class MetricKeyCache:
    """(name, group) -> id; keys are never deleted, so a process-wide cache is safe, as long
    as an id is kept only once the transaction that may have created it has committed."""

    def __init__(self) -> None:
        self._ids: dict[tuple[str, str], int] = {}

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Wrap the write transaction that calls ids(): on a rollback, forget what it added."""
        known = dict(self._ids)
        try:
            yield
        except BaseException:
            self._ids = known
            raise

    def ids(self, pairs: set[tuple[str, str]], session: Session) -> dict[tuple[str, str], int]:
        missing = pairs - self._ids.keys()
        if missing:
            _insert_ignore(session, orm.MetricKey, [{"name": n, "group": g} for n, g in missing])
            rows = session.execute(
                select(orm.MetricKey.id, orm.MetricKey.name, orm.MetricKey.group)
            )
            for key_id, name, group in rows:
                self._ids[(name, group)] = key_id
        return {p: self._ids[p] for p in pairs}


def _insert_ignore(session: Session, table, rows: list[dict]) -> None:
    session.execute(metric_store.dialect_insert(session, table).on_conflict_do_nothing(), rows)


def _as_value(name: str, value: Any) -> float | None:
    if isinstance(value, bool | int | float):
        try:
            number = float(value)
        except OverflowError:
            raise InvalidRequest(f"metric {name!r} is too large for a float") from None
        return number if math.isfinite(number) else None  # JSON has no NaN or infinity
    raise InvalidRequest(f"metric {name!r} must be a number, got {type(value).__name__}")


class ReportingTrial(NamedTuple):
    id: int
    experiment_id: int
    request_id: str
    state: str
    run_id: int
    steps_completed: int


def reporting_trial(trial_id: int, *, session: Session) -> ReportingTrial:
    """The few fields a metric report needs, without loading the ORM object (hot path)."""
    t = orm.Trial
    row = session.execute(
        select(t.id, t.experiment_id, t.request_id, t.state, t.run_id, t.steps_completed).where(
            t.id == trial_id
        )
    ).first()
    if row is None:
        raise NotFound(f"trial {trial_id} does not exist")
    return ReportingTrial(*row)


def ingest(
    trial: ReportingTrial,
    run_id: int,
    body: dict[str, Any],
    *,
    keys: MetricKeyCache,
    session: Session,
) -> Batch:
    """Store a batch of reports for one trial (``body``'s "reports", or its "columns": see
    Batch); returns it, with the validation reports stored (the searcher reads only that
    group; any other is stored and served alike). The SQL is metric_store's."""
    if run_id > trial.run_id:
        raise Conflict(f"trial {trial.id} has no run {run_id}")
    batch = Batch(body)
    key_ids = keys.ids(set(batch.series), session)
    series = {key_ids[pair]: points for pair, points in batch.series.items()}
    if series:
        metric_store.store(session, trial.id, run_id, series)
    # One UPDATE: the furthest step so far, the report counts as a heartbeat, and new
    # points make the trial's stored curves (stored_curves.py) out of date.
    t = orm.Trial
    furthest = case((t.steps_completed < batch.top_step, batch.top_step), else_=t.steps_completed)
    changes = {"steps_completed": furthest, "last_heartbeat": utcnow()}
    if series:
        changes["metrics_version"] = t.metrics_version + 1
    session.execute(update(t).where(t.id == trial.id).values(changes))
    return batch


class Batch:
    """A POST's points, checked whole before anything is written (a bad report stores none
    of its batch): each (name, group)'s points by step, a resent step's last value winning;
    the furthest step; and the validation reports, for the searcher. They come either as
    "reports", [{"group", "steps_completed", "metrics": {name: number}}], or as "columns",
    [{"group", "steps": [step], "metrics": {name: [number, one a step]}}], which the trials
    send: 40 % of the bytes, and JSON decodes a list of numbers four times as fast as as
    many objects."""

    def __init__(self, body: dict[str, Any]) -> None:
        self.series: dict[tuple[str, str], dict[int, float | None]] = {}
        self.top_step = 0
        self.reports = 0  # a report: one group's metrics at one step
        self.validations: list[dict] = []
        self._groups: set[str] = set()  # checked once a batch, not once a report
        if "columns" in body:
            columns = body["columns"]
            if not isinstance(columns, list):
                raise InvalidRequest("columns must be a list")
            for block in columns:
                self._add_columns(block)
        else:
            reports = body.get("reports")
            if not isinstance(reports, list):
                raise InvalidRequest("reports must be a list")
            for report in reports:
                self._add_report(report)

    def _group(self, group: Any) -> str:
        if type(group) is not str or group not in self._groups:  # a list is unhashable
            if not is_group(group):
                raise InvalidRequest(refusal(group))
            self._groups.add(group)
        return group

    def _points(self, name: Any, group: str) -> dict[int, float | None]:
        points = self.series.get((name, group))
        if points is None:
            if not isinstance(name, str) or not name or len(name) > MAX_NAME:
                raise InvalidRequest(
                    f"metric names must have 1 to {MAX_NAME} characters: {name!r:.80}"
                )
            points = self.series[(name, group)] = {}
        return points

    def _add_report(self, report: Any) -> None:
        if not isinstance(report, dict):
            raise InvalidRequest(
                "each report must be an object with group, steps_completed, metrics"
            )
        group = self._group(report.get("group"))
        step = report.get("steps_completed")
        if type(step) is not int or not 0 <= step <= MAX_STEP:  # bool is not an int here
            raise InvalidRequest(
                f"steps_completed must be an integer from 0 to {MAX_STEP}, got {step!r}"
            )
        metrics = report.get("metrics")
        if not isinstance(metrics, dict):
            raise InvalidRequest("metrics must be an object of name -> number")
        values: dict[str, float | None] = {}
        for name, value in metrics.items():
            points = self._points(name, group)
            if type(value) is float and math.isfinite(value):
                points[step] = values[name] = value
            else:
                points[step] = values[name] = _as_value(name, value)
        self.top_step = max(self.top_step, step)
        self.reports += 1
        if group == VALIDATION:
            self.validations.append({"steps_completed": step, "metrics": values})

    def _add_columns(self, block: Any) -> None:
        if not isinstance(block, dict):
            raise InvalidRequest("each of columns must be an object with group, steps, metrics")
        group = self._group(block.get("group"))
        steps = block.get("steps")
        if (
            not isinstance(steps, list)
            or not all(type(step) is int for step in steps)
            or (steps and not (0 <= min(steps) and max(steps) <= MAX_STEP))
        ):
            raise InvalidRequest(
                f"steps must be a list of integers from 0 to {MAX_STEP}, got {steps!r:.80}"
            )
        metrics = block.get("metrics")
        if not isinstance(metrics, dict):
            raise InvalidRequest("metrics must be an object of name -> list of numbers")
        columns: dict[str, list[float | None]] = {}
        for name, values in metrics.items():
            points = self._points(name, group)
            if not isinstance(values, list) or len(values) != len(steps):
                raise InvalidRequest(
                    f"metric {name!r:.80} must have a list of {len(steps)} values, one a step"
                )
            if not (all(type(v) is float for v in values) and all(map(math.isfinite, values))):
                values = [_as_value(name, v) for v in values]
            points.update(zip(steps, values, strict=True))
            columns[name] = values
        if steps:
            self.top_step = max(self.top_step, *steps)
        self.reports += len(steps)
        if group == VALIDATION:
            for i, step in enumerate(steps):
                values_at = {name: column[i] for name, column in columns.items()}
                self.validations.append({"steps_completed": step, "metrics": values_at})


def summaries(
    trial_ids: list[int], *, smaller_is_better: bool, session: Session
) -> dict[int, list[api.MetricSummary]]:
    ms = orm.MetricSummary
    rows = session.execute(  # plain columns, not ORM objects: tables list many trials
        select(
            ms.trial_id,
            *(getattr(ms, f) for f in metric_store.SUMMARY_FIELDS),
            orm.MetricKey.name,
            orm.MetricKey.group,
        )
        .join(orm.MetricKey, orm.MetricKey.id == ms.key_id)
        .where(ms.trial_id.in_(trial_ids))
    )
    out: dict[int, list[api.MetricSummary]] = {t: [] for t in trial_ids}
    for row in rows:
        best, best_step = (row.min, row.min_step) if smaller_is_better else (row.max, row.max_step)
        out[row.trial_id].append(
            api.MetricSummary(
                name=row.name,
                group=row.group,
                count=row._mapping["count"],  # row.count is typed as tuple's count()
                last=row.last,
                last_step=row.last_step,
                min=row.min,
                max=row.max,
                best=best,
                best_step=best_step,
            )
        )
    return out


def value_at(trial_id: int, name: str, step: int, *, session: Session) -> float | None:
    """The validation value of `name` reported at exactly `step`, if any."""
    return session.scalar(
        select(orm.MetricPoint.value)
        .join(orm.MetricKey, orm.MetricKey.id == orm.MetricPoint.key_id)
        .where(
            orm.MetricPoint.trial_id == trial_id,
            orm.MetricPoint.steps_completed == step,
            orm.MetricKey.name == name,
            orm.MetricKey.group == VALIDATION,
        )
    )
