"""Ended trials' downsampled curves, kept in the database (orm.StoredCurve).

An experiment's curves are every trial's points of one metric: for 1,000 trials of 1,000
points, reading and downsampling them takes seconds, far over what a page can wait. An
ended trial gets no more points (its reports are refused in the write transaction that
would store them), so its curve is computed once, on the first request that asks for it,
and stored; a restarted master reads it back instead of the points.

A stored curve carries the trial's metrics_version when it was computed, and is served only
while the trial still has that version: should a trial ever get points again (a reopened
trial), its stored curves stop being served at once, with nothing to delete.
"""

from __future__ import annotations

import logging
from typing import NamedTuple

from sqlalchemy import bindparam, delete, func, insert, select
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from shipyard.common.states import TERMINAL_TRIAL_STATES
from shipyard.server import orm
from shipyard.server.db import Database

log = logging.getLogger(__name__)

# The table's columns: rows, not ORM objects, for a thousand curves at a time.
# (The Table from the metadata: `__table__` is typed as a FromClause, which delete() refuses.)
_stored = orm.Base.metadata.tables[orm.StoredCurve.__tablename__]
_c = _stored.c
_trials = orm.Trial.__table__.c
_ENDED = sorted(state.value for state in TERMINAL_TRIAL_STATES)


class Columns(NamedTuple):
    """One trial's curve as api.Curve's two columns, each a JSON array."""

    steps: str
    values: str


def load(
    experiment_id: int, key_id: int, max_points: int, versions: dict[int, int], *, session: Session
) -> dict[int, Columns]:
    """The stored curves of the experiment's trials for (metric, max_points) that are
    current: computed at the version `versions` (trial id -> metrics_version) gives."""
    rows = (
        session.connection()
        .execute(
            select(_c.trial_id, _c.metrics_version, _c.steps_json, _c.values_json).where(
                _c.key_id == key_id,
                _c.max_points == max_points,
                _c.trial_id.in_(select(_trials.id).where(_trials.experiment_id == experiment_id)),
            )
        )
        .all()
    )
    return {
        trial_id: Columns(steps, values)
        for trial_id, version, steps, values in rows
        if versions.get(trial_id) == version
    }


def missing(
    experiment_id: int, key_id: int, max_points: int, *, session: Session
) -> dict[int, int]:
    """The experiment's ended trials without a current stored curve for (metric,
    max_points): trial id -> metrics_version. What the curve keeper looks for, for each
    experiment at a master's start: the database compares the versions, so when every curve
    is stored no row comes back (at 100 experiments of 1,000 trials, reading a version for
    each trial held the master's interpreter for 1.6 s, while a restarted master's first
    pages waited). The stored version is looked up by primary key for each trial: selected
    by the experiment's trial ids or joined, PostgreSQL scanned every stored curve."""
    t = _trials
    stored_version = (
        select(_c.metrics_version)
        .where(_c.trial_id == t.id, _c.key_id == key_id, _c.max_points == max_points)
        .scalar_subquery()
    )
    rows = session.connection().execute(
        select(t.id, t.metrics_version).where(
            t.experiment_id == experiment_id,
            t.state.in_(_ENDED),
            func.coalesce(stored_version, -1) != t.metrics_version,
        )
    )
    return dict(rows.tuples().all())


class Computed(NamedTuple):
    """A curve computed for an ended trial, to be stored."""

    trial_id: int
    key_id: int
    max_points: int
    metrics_version: int
    columns: Columns


def save(curves: list[Computed], *, session: Session) -> None:
    """Store the curves, replacing any of the same (trial, metric, max_points): one of an
    older version, or the same curve stored meanwhile by another request."""
    if not curves:
        return
    conn = session.connection()
    conn.execute(
        delete(_stored).where(
            _c.trial_id == bindparam("t"),
            _c.key_id == bindparam("k"),
            _c.max_points == bindparam("m"),
        ),
        [{"t": c.trial_id, "k": c.key_id, "m": c.max_points} for c in curves],
    )
    conn.execute(
        insert(_stored),
        [
            {
                "trial_id": c.trial_id,
                "key_id": c.key_id,
                "max_points": c.max_points,
                "metrics_version": c.metrics_version,
                "steps_json": c.columns.steps,
                "values_json": c.columns.values,
            }
            for c in curves
        ],
    )


def store(db: Database, curves: list[Computed], experiment_id: int) -> int:
    """Save the curves in a write transaction of their own; how many. A failure (a full
    disk, say) is logged, not raised: the curves are computed again next time."""
    if not curves:
        return 0
    try:
        with db.write() as s:
            save(curves, session=s)
    except DBAPIError:
        log.warning("could not store experiment %s's curves", experiment_id, exc_info=True)
        return 0
    return len(curves)
