"""Metric ingest and reads: points keyed by (trial, metric, step), summaries kept current."""

from __future__ import annotations

import math
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from shipyard.common import api
from shipyard.common.errors import Conflict, InvalidRequest
from shipyard.server import orm

GROUPS = ("training", "validation")


class MetricKeyCache:
    """(name, group) -> id; keys are never deleted, so a process-wide cache is safe."""

    def __init__(self) -> None:
        self._ids: dict[tuple[str, str], int] = {}

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
    dialect = session.get_bind().dialect.name
    stmt = (postgresql if dialect == "postgresql" else sqlite).insert(table).values(rows)
    session.execute(stmt.on_conflict_do_nothing())


def _as_value(name: str, value: Any) -> float | None:
    if isinstance(value, bool | int | float):
        number = float(value)
        return number if math.isfinite(number) else None  # JSON has no NaN or infinity
    raise InvalidRequest(f"metric {name!r} must be a number, got {type(value).__name__}")


def ingest(
    trial: orm.Trial, run_id: int, reports: list[dict], *, keys: MetricKeyCache, session: Session
) -> list[dict]:
    """Store a batch of reports for one trial; returns the validation reports stored."""
    if run_id > trial.run_id:
        raise Conflict(f"trial {trial.id} has no run {run_id}")
    rows: dict[tuple[int, int, int], dict] = {}
    parsed = []
    for report in reports:
        group = report.get("group")
        if group not in GROUPS:
            raise InvalidRequest(f"metric group must be one of {GROUPS}, got {group!r}")
        step = report.get("steps_completed")
        if not isinstance(step, int) or isinstance(step, bool) or step < 0:
            raise InvalidRequest(f"steps_completed must be a non-negative integer, got {step!r}")
        metrics = report.get("metrics")
        if not isinstance(metrics, dict):
            raise InvalidRequest("metrics must be an object of name -> number")
        values = {str(name): _as_value(name, v) for name, v in metrics.items()}
        parsed.append((group, step, values))
    pairs = {(name, group) for group, _, values in parsed for name in values}
    key_ids = keys.ids(pairs, session)
    for group, step, values in parsed:
        for name, value in values.items():
            key_id = key_ids[(name, group)]
            rows[(trial.id, key_id, step)] = {
                "trial_id": trial.id,
                "key_id": key_id,
                "steps_completed": step,
                "value": value,
                "run_id": run_id,
            }
    if rows:
        _upsert_points(session, list(rows.values()))
        _update_summaries(session, trial.id, list(rows.values()))
    top = max((step for _, step, _ in parsed), default=0)
    if top > trial.steps_completed:
        trial.steps_completed = top
    return [
        {"steps_completed": step, "metrics": values}
        for group, step, values in parsed
        if group == "validation"
    ]


def _upsert_points(session: Session, rows: list[dict]) -> None:
    dialect = session.get_bind().dialect.name
    stmt = (postgresql if dialect == "postgresql" else sqlite).insert(orm.MetricPoint).values(rows)
    stmt = stmt.on_conflict_do_update(
        index_elements=["trial_id", "key_id", "steps_completed"],
        set_={"value": stmt.excluded.value, "run_id": stmt.excluded.run_id},
    )
    session.execute(stmt)


def _update_summaries(session: Session, trial_id: int, rows: list[dict]) -> None:
    by_key: dict[int, list[dict]] = {}
    for row in rows:
        by_key.setdefault(row["key_id"], []).append(row)
    existing = {
        s.key_id: s
        for s in session.scalars(
            select(orm.MetricSummary).where(
                orm.MetricSummary.trial_id == trial_id, orm.MetricSummary.key_id.in_(by_key)
            )
        )
    }
    for key_id, new in by_key.items():
        summary = existing.get(key_id)
        if summary is None:
            summary = orm.MetricSummary(trial_id=trial_id, key_id=key_id, count=0)
            session.add(summary)
        new.sort(key=lambda r: r["steps_completed"])
        appends = summary.last_step is None or new[0]["steps_completed"] > summary.last_step
        if appends:
            _fold(summary, new)
        else:  # a resent or rerun step replaced a value: recount from the points
            _recompute(session, summary)


def _fold(summary: orm.MetricSummary, rows: list[dict]) -> None:
    for row in rows:
        value, step = row["value"], row["steps_completed"]
        summary.count = (summary.count or 0) + 1
        summary.last, summary.last_step = value, step
        if value is None:
            continue
        if summary.min is None or value < summary.min:
            summary.min, summary.min_step = value, step
        if summary.max is None or value > summary.max:
            summary.max, summary.max_step = value, step


def _recompute(session: Session, summary: orm.MetricSummary) -> None:
    session.flush()
    points = orm.MetricPoint
    where = (points.trial_id == summary.trial_id, points.key_id == summary.key_id)
    summary.count = session.scalar(select(func.count()).where(*where)) or 0
    last = session.execute(
        select(points.steps_completed, points.value)
        .where(*where)
        .order_by(points.steps_completed.desc())
        .limit(1)
    ).first()
    summary.last_step, summary.last = (last[0], last[1]) if last else (None, None)
    for attr, order in (("min", points.value.asc()), ("max", points.value.desc())):
        best = session.execute(
            select(points.value, points.steps_completed)
            .where(*where, points.value.is_not(None))
            .order_by(order, points.steps_completed)
            .limit(1)
        ).first()
        setattr(summary, attr, best[0] if best else None)
        setattr(summary, f"{attr}_step", best[1] if best else None)


def summaries(
    trial_ids: list[int], *, smaller_is_better: bool, session: Session
) -> dict[int, list[api.MetricSummary]]:
    rows = session.execute(
        select(orm.MetricSummary, orm.MetricKey.name, orm.MetricKey.group)
        .join(orm.MetricKey, orm.MetricKey.id == orm.MetricSummary.key_id)
        .where(orm.MetricSummary.trial_id.in_(trial_ids))
    )
    out: dict[int, list[api.MetricSummary]] = {t: [] for t in trial_ids}
    for s, name, group in rows:
        best, best_step = (s.min, s.min_step) if smaller_is_better else (s.max, s.max_step)
        out[s.trial_id].append(
            api.MetricSummary(
                name=name,
                group=group,
                count=s.count,
                last=s.last,
                last_step=s.last_step,
                min=s.min,
                max=s.max,
                best=best,
                best_step=best_step,
            )
        )
    return out


def series(
    trial_id: int, *, group: str | None, name: str | None, session: Session
) -> list[api.MetricSeries]:
    keys = select(orm.MetricKey)
    if group:
        keys = keys.where(orm.MetricKey.group == group)
    if name:
        keys = keys.where(orm.MetricKey.name == name)
    out = []
    for key in session.scalars(keys):
        points = session.execute(
            select(orm.MetricPoint.steps_completed, orm.MetricPoint.value)
            .where(orm.MetricPoint.trial_id == trial_id, orm.MetricPoint.key_id == key.id)
            .order_by(orm.MetricPoint.steps_completed)
        ).all()
        if points:
            out.append(
                api.MetricSeries(
                    trial_id=trial_id,
                    name=key.name,
                    group=key.group,
                    points=[api.MetricPoint(steps_completed=s, value=v) for s, v in points],
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
            orm.MetricKey.group == "validation",
        )
    )
