"""Metric ingest and reads: points keyed by (trial, metric, step), summaries kept current."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

from sqlalchemy import case, func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from shipyard.common import api
from shipyard.common.errors import Conflict, InvalidRequest, NotFound
from shipyard.common.metric_groups import VALIDATION, is_group, refusal
from shipyard.server import orm
from shipyard.server.orm import utcnow

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
    session.execute(_dialect_insert(session, table).on_conflict_do_nothing(), rows)


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
    Batch); returns it, with the validation reports stored (the searcher reads only that group;
    any other is stored and served alike). This runs for every report of every trial, so
    the points go to the driver as plain tuples (one executemany on SQLite, one statement
    over arrays on PostgreSQL): SQLAlchemy's per-row parameter handling cost more than
    SQLite's own insert (bench/metric_ingest.py)."""
    if run_id > trial.run_id:
        raise Conflict(f"trial {trial.id} has no run {run_id}")
    batch = Batch(body)
    key_ids = keys.ids(set(batch.series), session)
    series = {key_ids[pair]: points for pair, points in batch.series.items()}
    if series:
        _upsert_points(session, trial.id, run_id, series)
        _update_summaries(session, trial.id, series)
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
    send: a third of the bytes, and JSON decodes a list of numbers four times as fast as as
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


def _dialect_insert(session: Session, mapped):
    """INSERT on the mapped class's Table: with the class itself, Session.execute would take
    the ORM's bulk path, which costs more than the SQL."""
    dialect = session.get_bind().dialect.name
    return (postgresql if dialect == "postgresql" else sqlite).insert(mapped.__table__)


def _upsert_points(
    session: Session, trial_id: int, run_id: int, series: dict[int, dict[int, float | None]]
) -> None:
    connection = session.connection()
    if connection.dialect.name == "postgresql":
        key_ids: list[int] = []
        steps: list[int] = []
        values: list[float | None] = []
        for key_id, points in series.items():
            key_ids += [key_id] * len(points)
            steps += points.keys()
            values += points.values()
        connection.exec_driver_sql(
            _UPSERT_POINTS_POSTGRESQL, (trial_id, run_id, key_ids, steps, values)
        )
    else:
        rows = [
            (trial_id, key_id, step, value, run_id)
            for key_id, points in series.items()
            for step, value in points.items()
        ]
        connection.exec_driver_sql(_UPSERT_POINTS_SQLITE, rows)


_ON_CONFLICT = (
    "ON CONFLICT (trial_id, key_id, steps_completed) "
    "DO UPDATE SET value = excluded.value, run_id = excluded.run_id"
)
_UPSERT_POINTS_SQLITE = (
    "INSERT INTO metric_points (trial_id, key_id, steps_completed, value, run_id) "
    f"VALUES (?, ?, ?, ?, ?) {_ON_CONFLICT}"
)
# One statement for the whole batch (the points of a (key, step) are unique in it, as ON
# CONFLICT DO UPDATE requires): 2,000 pipelined INSERTs cost three times as much.
_UPSERT_POINTS_POSTGRESQL = (
    "INSERT INTO metric_points (trial_id, key_id, steps_completed, value, run_id) "
    "SELECT %s, key_id, step, value, %s "
    "FROM unnest(%s::integer[], %s::bigint[], %s::double precision[]) AS p(key_id, step, value) "
    f"{_ON_CONFLICT}"
)

_SUMMARY_FIELDS = ("count", "last", "last_step", "min", "min_step", "max", "max_step")


def _update_summaries(
    session: Session, trial_id: int, series: dict[int, dict[int, float | None]]
) -> None:
    ms = orm.MetricSummary
    existing = {
        r.key_id: r._asdict()
        for r in session.execute(
            select(ms.key_id, *(getattr(ms, f) for f in _SUMMARY_FIELDS)).where(
                ms.trial_id == trial_id, ms.key_id.in_(list(series))
            )
        )
    }
    out = []
    for key_id, points in series.items():
        summary = existing.get(key_id) or {"key_id": key_id, "count": 0, "last_step": None}
        new = sorted(points.items())
        if summary["last_step"] is None or new[0][0] > summary["last_step"]:
            _fold(summary, new)
        else:  # a resent or rerun step replaced a value: recount from the points
            _recompute(session, trial_id, summary)
        out.append(
            {f: summary.get(f) for f in _SUMMARY_FIELDS} | {"trial_id": trial_id, "key_id": key_id}
        )
    stmt = _dialect_insert(session, ms)
    stmt = stmt.on_conflict_do_update(
        index_elements=["trial_id", "key_id"],
        set_={f: getattr(stmt.excluded, f) for f in _SUMMARY_FIELDS},
    )
    session.execute(stmt, out)


def _fold(summary: dict, points: list[tuple[int, float | None]]) -> None:
    """Add points later than any the summary counts, in step order; a tie keeps the
    earliest step as best."""
    summary["count"] = (summary.get("count") or 0) + len(points)
    summary["last_step"], summary["last"] = points[-1]
    numbers = [(value, step) for step, value in points if value is not None]
    if not numbers:
        return
    low = min(numbers, key=_value)  # the first of equals: the earliest step
    high = max(numbers, key=_value)
    if summary.get("min") is None or low[0] < summary["min"]:
        summary["min"], summary["min_step"] = low
    if summary.get("max") is None or high[0] > summary["max"]:
        summary["max"], summary["max_step"] = high


def _value(point: tuple[float, int]) -> float:
    return point[0]


def _recompute(session: Session, trial_id: int, summary: dict) -> None:
    points = orm.MetricPoint
    where = (points.trial_id == trial_id, points.key_id == summary["key_id"])
    summary["count"] = session.scalar(select(func.count()).where(*where)) or 0
    last = session.execute(
        select(points.steps_completed, points.value)
        .where(*where)
        .order_by(points.steps_completed.desc())
        .limit(1)
    ).first()
    summary["last_step"], summary["last"] = (last[0], last[1]) if last else (None, None)
    for attr, order in (("min", points.value.asc()), ("max", points.value.desc())):
        best = session.execute(
            select(points.value, points.steps_completed)
            .where(*where, points.value.is_not(None))
            .order_by(order, points.steps_completed)
            .limit(1)
        ).first()
        summary[attr] = best[0] if best else None
        summary[f"{attr}_step"] = best[1] if best else None


def summaries(
    trial_ids: list[int], *, smaller_is_better: bool, session: Session
) -> dict[int, list[api.MetricSummary]]:
    ms = orm.MetricSummary
    rows = session.execute(  # plain columns, not ORM objects: tables list many trials
        select(
            ms.trial_id,
            *(getattr(ms, f) for f in _SUMMARY_FIELDS),
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
