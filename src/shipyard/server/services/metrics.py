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
    reports: list[dict],
    *,
    keys: MetricKeyCache,
    session: Session,
) -> list[dict]:
    """Store a batch of reports for one trial; returns the validation reports stored (the
    searcher reads only that group; any other is stored and served alike). Core
    statements only, each compiled once: this runs for every report of every trial."""
    if run_id > trial.run_id:
        raise Conflict(f"trial {trial.id} has no run {run_id}")
    parsed = [_parse(report) for report in reports]
    pairs = {(name, group) for group, _, values in parsed for name in values}
    key_ids = keys.ids(pairs, session)
    rows: dict[tuple[int, int], dict] = {}
    for group, step, values in parsed:
        for name, value in values.items():
            key_id = key_ids[(name, group)]
            rows[(key_id, step)] = {
                "trial_id": trial.id,
                "key_id": key_id,
                "steps_completed": step,
                "value": value,
                "run_id": run_id,
            }
    if rows:
        session.execute(_upsert_points_stmt(session), list(rows.values()))
        _update_summaries(session, trial.id, list(rows.values()))
    # One UPDATE: the furthest step so far, the report counts as a heartbeat, and new
    # points make the trial's stored curves (stored_curves.py) out of date.
    top = max((step for _, step, _ in parsed), default=0)
    t = orm.Trial
    furthest = case((t.steps_completed < top, top), else_=t.steps_completed)
    changes = {"steps_completed": furthest, "last_heartbeat": utcnow()}
    if rows:
        changes["metrics_version"] = t.metrics_version + 1
    session.execute(update(t).where(t.id == trial.id).values(changes))
    return [
        {"steps_completed": step, "metrics": values}
        for group, step, values in parsed
        if group == VALIDATION
    ]


def _parse(report: Any) -> tuple[str, int, dict[str, float | None]]:
    if not isinstance(report, dict):
        raise InvalidRequest("each report must be an object with group, steps_completed, metrics")
    group = report.get("group")
    if not is_group(group):  # checked before any write: a bad report stores none of its batch
        raise InvalidRequest(refusal(group))
    step = report.get("steps_completed")
    if not isinstance(step, int) or isinstance(step, bool) or not 0 <= step <= MAX_STEP:
        raise InvalidRequest(
            f"steps_completed must be an integer from 0 to {MAX_STEP}, got {step!r}"
        )
    metrics = report.get("metrics")
    if not isinstance(metrics, dict):
        raise InvalidRequest("metrics must be an object of name -> number")
    for name in metrics:
        if not name or len(name) > MAX_NAME:
            raise InvalidRequest(f"metric names must have 1 to {MAX_NAME} characters: {name!r:.80}")
    return group, step, {str(name): _as_value(name, v) for name, v in metrics.items()}


def _dialect_insert(session: Session, mapped):
    """INSERT on the mapped class's Table: with the class itself, Session.execute would take
    the ORM's bulk path, which costs more than the SQL."""
    dialect = session.get_bind().dialect.name
    return (postgresql if dialect == "postgresql" else sqlite).insert(mapped.__table__)


def _upsert_points_stmt(session: Session):
    stmt = _dialect_insert(session, orm.MetricPoint)
    return stmt.on_conflict_do_update(
        index_elements=["trial_id", "key_id", "steps_completed"],
        set_={"value": stmt.excluded.value, "run_id": stmt.excluded.run_id},
    )


_SUMMARY_FIELDS = ("count", "last", "last_step", "min", "min_step", "max", "max_step")


def _update_summaries(session: Session, trial_id: int, rows: list[dict]) -> None:
    by_key: dict[int, list[dict]] = {}
    for row in rows:
        by_key.setdefault(row["key_id"], []).append(row)
    ms = orm.MetricSummary
    existing = {
        r.key_id: r._asdict()
        for r in session.execute(
            select(ms.key_id, *(getattr(ms, f) for f in _SUMMARY_FIELDS)).where(
                ms.trial_id == trial_id, ms.key_id.in_(list(by_key))
            )
        )
    }
    out = []
    for key_id, new in by_key.items():
        summary = existing.get(key_id) or {"key_id": key_id, "count": 0, "last_step": None}
        new.sort(key=lambda r: r["steps_completed"])
        if summary["last_step"] is None or new[0]["steps_completed"] > summary["last_step"]:
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


def _fold(summary: dict, rows: list[dict]) -> None:
    for row in rows:
        value, step = row["value"], row["steps_completed"]
        summary["count"] = (summary.get("count") or 0) + 1
        summary["last"], summary["last_step"] = value, step
        if value is None:
            continue
        if summary.get("min") is None or value < summary["min"]:
            summary["min"], summary["min_step"] = value, step
        if summary.get("max") is None or value > summary["max"]:
            summary["max"], summary["max_step"] = value, step


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
