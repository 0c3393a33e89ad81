"""Writing a batch's points and keeping each (trial, metric)'s summary current: the SQL of
metric ingest (services/metrics.py checks the batch and calls store()).

This runs for every report of every trial, so the points go to the driver as plain tuples
(one executemany on SQLite) or, on PostgreSQL, as one binary COPY (new points) or three
array literals (one upsert of resent points), not through SQLAlchemy's per-row parameter
handling, which cost more than SQLite's own insert (bench/metric_ingest.py)."""

from __future__ import annotations

import struct

from sqlalchemy import func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from shipyard.server import orm

Series = dict[int, dict[int, float | None]]  # key id -> step -> value (None: NaN)

SUMMARY_FIELDS = ("count", "last", "last_step", "min", "min_step", "max", "max_step")


def dialect_insert(session: Session, mapped):
    """INSERT on the mapped class's Table: with the class itself, Session.execute would take
    the ORM's bulk path, which costs more than the SQL."""
    dialect = session.get_bind().dialect.name
    return (postgresql if dialect == "postgresql" else sqlite).insert(mapped.__table__)


def store(session: Session, trial_id: int, run_id: int, series: Series) -> None:
    """Store the points and update the summaries. A metric whose points all come after the
    last step it has stored (a trial reporting on) is inserted plainly and folded into its
    summary; one with a step stored already (resent after a restart) has the values
    replaced (ON CONFLICT) and its summary recounted from the points. On PostgreSQL the
    plain INSERT costs a third less than the upsert's speculative insertion."""
    summaries = _summaries(session, trial_id, list(series))
    later = {k: points for k, points in series.items() if _all_later(summaries.get(k), points)}
    again = {k: points for k, points in series.items() if k not in later}
    for part, replace in ((later, False), (again, True)):
        if part:
            _insert_points(session, trial_id, run_id, part, replace=replace)
    out = []
    for key_id, points in series.items():
        summary = summaries.get(key_id) or {"key_id": key_id, "count": 0, "last_step": None}
        if key_id in later:
            steps = sorted(points)
            _fold(summary, steps, [points[step] for step in steps])
        else:
            _recount(session, trial_id, summary)
        out.append(
            {f: summary.get(f) for f in SUMMARY_FIELDS} | {"trial_id": trial_id, "key_id": key_id}
        )
    ms = orm.MetricSummary
    stmt = dialect_insert(session, ms)
    stmt = stmt.on_conflict_do_update(
        index_elements=["trial_id", "key_id"],
        set_={f: getattr(stmt.excluded, f) for f in SUMMARY_FIELDS},
    )
    session.execute(stmt, out)


def _summaries(session: Session, trial_id: int, key_ids: list[int]) -> dict[int, dict]:
    ms = orm.MetricSummary
    rows = session.execute(
        select(ms.key_id, *(getattr(ms, f) for f in SUMMARY_FIELDS)).where(
            ms.trial_id == trial_id, ms.key_id.in_(key_ids)
        )
    )
    return {row.key_id: row._asdict() for row in rows}


def _all_later(summary: dict | None, points: dict[int, float | None]) -> bool:
    """Whether no point's step is stored yet: the summary's last step is the highest stored."""
    return summary is None or summary["last_step"] is None or min(points) > summary["last_step"]


def _insert_points(
    session: Session, trial_id: int, run_id: int, series: Series, *, replace: bool
) -> None:
    connection = session.connection()
    if not replace and connection.dialect.driver == "psycopg":
        _copy_points(connection.connection.dbapi_connection, trial_id, run_id, series)
    elif connection.dialect.name == "postgresql":
        key_ids: list[int] = []
        steps: list[int] = []
        values: list[float | None] = []
        for key_id, points in series.items():
            key_ids += [key_id] * len(points)
            steps += points.keys()
            values += points.values()
        arrays = (_int_array(key_ids), _int_array(steps), _float_array(values))
        sql = _INSERT_POSTGRESQL + (_ON_CONFLICT if replace else "")
        connection.exec_driver_sql(sql, (trial_id, run_id, *arrays))
    else:
        rows = [
            (trial_id, key_id, step, value, run_id)
            for key_id, points in series.items()
            for step, value in points.items()
        ]
        connection.exec_driver_sql(_INSERT_SQLITE + (_ON_CONFLICT if replace else ""), rows)


def _copy_points(dbapi_connection, trial_id: int, run_id: int, series: Series) -> None:
    """New points by COPY in PostgreSQL's binary format (psycopg), in the session's
    transaction: per 10,000 points it cost the master a third and PostgreSQL half of the
    INSERT over unnest, whose array literals need each float's repr."""
    chunks = [_COPY_HEADER]
    for key_id, points in series.items():
        values = points.values()
        if None in values:
            chunks += [_copy_row(trial_id, key_id, s, v, run_id) for s, v in points.items()]
        else:
            pack = _COPY_ROW.pack
            chunks += [
                pack(5, 4, trial_id, 4, key_id, 8, s, 8, v, 4, run_id) for s, v in points.items()
            ]
    chunks.append(_COPY_TRAILER)
    with dbapi_connection.cursor() as cursor, cursor.copy(_COPY_POSTGRESQL) as copy:
        copy.write(b"".join(chunks))


def _copy_row(trial_id: int, key_id: int, step: int, value: float | None, run_id: int) -> bytes:
    if value is None:
        return _COPY_NULL_ROW.pack(5, 4, trial_id, 4, key_id, 8, step, -1, 4, run_id)
    return _COPY_ROW.pack(5, 4, trial_id, 4, key_id, 8, step, 8, value, 4, run_id)


# COPY's binary format: a signature, flags and header extension length; each row its field
# count, then each field's byte length (-1: NULL) and big-endian value; -1 as the trailer.
_COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + bytes(8)
_COPY_TRAILER = b"\xff\xff"
_COPY_ROW = struct.Struct("!hiiiiiqidii")  # trial_id, key_id, steps_completed, value, run_id
_COPY_NULL_ROW = struct.Struct("!hiiiiiqiii")
_COPY_POSTGRESQL = (
    "COPY metric_points (trial_id, key_id, steps_completed, value, run_id) "
    "FROM STDIN (FORMAT BINARY)"
)


# Array literals for the statement's casts, written here: psycopg's list adapter checks each
# element with a regular expression, which cost the master more than PostgreSQL's INSERT.
def _int_array(numbers: list[int]) -> str:
    return "{" + ",".join(map(str, numbers)) + "}"


def _float_array(numbers: list[float | None]) -> str:
    """repr: the shortest text that reads back as the same double; None is NULL."""
    return "{" + ",".join("NULL" if v is None else repr(v) for v in numbers) + "}"


_ON_CONFLICT = (
    " ON CONFLICT (trial_id, key_id, steps_completed)"
    " DO UPDATE SET value = excluded.value, run_id = excluded.run_id"
)
_INSERT_SQLITE = (
    "INSERT INTO metric_points (trial_id, key_id, steps_completed, value, run_id) "
    "VALUES (?, ?, ?, ?, ?)"
)
# One statement for the whole batch (a (key, step) is in it once, as ON CONFLICT DO UPDATE
# requires): 2,000 pipelined INSERTs cost three times as much.
_INSERT_POSTGRESQL = (
    "INSERT INTO metric_points (trial_id, key_id, steps_completed, value, run_id) "
    "SELECT %s, key_id, step, value, %s "
    "FROM unnest(%s::integer[], %s::bigint[], %s::double precision[]) AS p(key_id, step, value)"
)


def _fold(summary: dict, steps: list[int], values: list[float | None]) -> None:
    """Add points later than any the summary counts, in step order; a tie keeps the
    earliest step as best. Built-in min, max and index: a POST folds thousands of points."""
    summary["count"] = (summary.get("count") or 0) + len(steps)
    summary["last_step"], summary["last"] = steps[-1], values[-1]
    numbers = [v for v in values if v is not None]
    if not numbers:
        return
    low, high = min(numbers), max(numbers)
    if summary.get("min") is None or low < summary["min"]:
        summary["min"], summary["min_step"] = low, steps[values.index(low)]  # the first
    if summary.get("max") is None or high > summary["max"]:
        summary["max"], summary["max_step"] = high, steps[values.index(high)]


def _recount(session: Session, trial_id: int, summary: dict) -> None:
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
