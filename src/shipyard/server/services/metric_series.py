"""Metric points read back as series: one trial's metrics, one metric of every trial of an
experiment (the UI's curves), and the metric names an experiment has.

Every read is one query over metric_points however many trials and metrics it covers;
the UI draws a thousand trials at once, and a query per trial cost more than the points.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import groupby
from operator import itemgetter
from typing import NamedTuple

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.orm import Session

from shipyard.common import api
from shipyard.common.states import TrialState
from shipyard.server import orm
from shipyard.server.services import stored_curves
from shipyard.server.services.downsample import Point, downsample

# The most points a series may be asked to keep (a request's max_points): more than any
# chart draws, and it bounds what one answer holds.
MAX_POINTS = 100_000
# The most points a stored curve keeps: a chart's curve. A larger ask (the ASHA rungs view
# reads whole series) is computed each time, so the stored curves stay a few KB a trial.
MAX_STORED_POINTS = 2_000

# The table's columns, not the mapped class's: a select of ORM attributes has its rows
# go through the ORM's loading, which cost as much as reading them.
_points = orm.MetricPoint.__table__.c
_trials = orm.Trial.__table__.c

_FEW = 500  # trial ids a curves query names one by one, at most
# What a chart of every trial of an experiment draws: about this many points in all, and at
# most _CHART_MOST a trial.
_CHART_BUDGET = 200_000
_CHART_MOST = 400
_CHART_LEAST = 16


def chart_points(trial_count: int) -> int:
    """The points a trial's curve keeps when a chart draws all `trial_count` of them: 400 up
    to 500 trials, then a power of two (at least 16), so that the size, and with it the
    stored curves, changes when the trial count doubles and not with every new trial."""
    share = _CHART_BUDGET // max(1, trial_count)
    if share >= _CHART_MOST:
        return _CHART_MOST
    if share <= _CHART_LEAST:
        return _CHART_LEAST
    return 1 << (share.bit_length() - 1)


def series(
    trial_id: int,
    *,
    group: str | None,
    name: str | None,
    max_points: int | None = None,
    session: Session,
) -> list[api.MetricSeries]:
    """Every metric of the trial (or those of `group` and `name`), by metric key."""
    keys = _keys(group, name, session)
    if not keys:
        return []
    where = [_points.trial_id == trial_id]
    if group or name:
        where.append(_points.key_id.in_(list(keys)))
    return [
        _series(trial_id, *keys[key_id], points)
        for key_id, points in _read(_points.key_id, where, max_points, session)
    ]


class Curves(NamedTuple):
    """An experiment's curves of one metric: each trial's api.Curve as JSON, by trial id,
    and those computed for ended trials that were not stored (for stored_curves.save)."""

    bodies: list[bytes]
    to_store: list[stored_curves.Computed]


def curves(
    experiment_id: int,
    *,
    name: str,
    group: str,
    max_points: int | None,
    session: Session,
) -> Curves:
    """One metric of each trial of the experiment that reported it, each downsampled to
    max_points (None: chart_points of the experiment's trial count). Ended trials' curves
    come from stored_curves once computed; the others' points are read in one query,
    however many trials there are."""
    key_id = _key_id(group, name, session)
    if key_id is None:
        return Curves([], [])
    t = _trials
    trials = (
        session.connection()
        .execute(
            select(t.id, t.state, t.metrics_version)
            .where(t.experiment_id == experiment_id)
            .order_by(t.id)
        )
        .all()
    )
    if max_points is None:
        max_points = chart_points(len(trials))
    # Versions are read before the points: a curve computed below is at least as new as
    # the version it is stored with (on PostgreSQL each statement sees the latest commits).
    ended = {trial_id: v for trial_id, state, v in trials if TrialState(state).terminal}
    found = stored_curves.load(experiment_id, key_id, max_points, ended, session=session)
    wanted = [trial_id for trial_id, _, _ in trials if trial_id not in found]
    found.update(_compute(experiment_id, key_id, wanted, max_points, session))
    to_store = [
        stored_curves.Computed(trial_id, key_id, max_points, ended[trial_id], found[trial_id])
        for trial_id in wanted
        if trial_id in ended and max_points <= MAX_STORED_POINTS
    ]
    bodies = [
        _curve_json(trial_id, found[trial_id])
        for trial_id, _, _ in trials
        if trial_id in found and found[trial_id].steps != "[]"  # no point of the metric
    ]
    return Curves(bodies, to_store)


def curves_to_store(
    experiment_id: int, *, name: str, group: str, session: Session
) -> list[stored_curves.Computed]:
    """The chart's curves (chart_points of the trial count) of the experiment's ended trials
    that have none stored: computed to be stored (the curve keeper; not an answer). When all
    are stored, it costs three small queries, none reading a row per trial."""
    key_id = _key_id(group, name, session)
    if key_id is None:
        return []
    t = _trials
    trial_count = (
        session.connection()
        .execute(
            select(func.count()).select_from(orm.Trial).where(t.experiment_id == experiment_id)
        )
        .scalar_one()
    )
    max_points = chart_points(trial_count)
    # The versions are read before the points, as in curves().
    missing = stored_curves.missing(experiment_id, key_id, max_points, session=session)
    found = _compute(experiment_id, key_id, list(missing), max_points, session)
    return [
        stored_curves.Computed(trial_id, key_id, max_points, version, found[trial_id])
        for trial_id, version in missing.items()
    ]


def _compute(
    experiment_id: int, key_id: int, wanted: list[int], max_points: int, session: Session
) -> dict[int, stored_curves.Columns]:
    """The wanted trials' curves of one metric key, computed from their points (an empty
    curve for a trial without any)."""
    if not wanted:
        return {}
    # The ids when they are few (live trials, once the ended ones' are stored); else the
    # experiment's trials, which also reads the others' points, skipped below.
    t = _trials
    of_experiment = select(t.id).where(t.experiment_id == experiment_id)
    among = wanted if len(wanted) <= _FEW else of_experiment
    where = [_points.trial_id.in_(among), _points.key_id == key_id]
    read = dict(_read(_points.trial_id, where, max_points, session))
    return {trial_id: _columns(read.get(trial_id, [])) for trial_id in wanted}


def names(experiment_id: int, *, session: Session) -> list[api.MetricName]:
    """Every (name, group) a trial of the experiment reported, from the per-trial
    summaries (one row a metric a trial), never from the points."""
    trials = select(orm.Trial.id).where(orm.Trial.experiment_id == experiment_id)
    reported = select(orm.MetricSummary.key_id).where(orm.MetricSummary.trial_id.in_(trials))
    rows = session.execute(
        select(orm.MetricKey.name, orm.MetricKey.group)
        .where(orm.MetricKey.id.in_(reported))
        .order_by(orm.MetricKey.group, orm.MetricKey.name)
    )
    return [api.MetricName(name=n, group=g) for n, g in rows]


def _key_id(group: str, name: str, session: Session) -> int | None:
    """The one metric key of (name, group), which is unique; None if nothing reported it."""
    return next(iter(_keys(group, name, session)), None)


def _keys(group: str | None, name: str | None, session: Session) -> dict[int, tuple[str, str]]:
    """The metric keys asked for: id -> (name, group)."""
    query = select(orm.MetricKey.id, orm.MetricKey.name, orm.MetricKey.group)
    if group:
        query = query.where(orm.MetricKey.group == group)
    if name:
        query = query.where(orm.MetricKey.name == name)
    return {key_id: (n, g) for key_id, n, g in session.execute(query)}


def _read(
    series_column: ColumnElement[int],
    where: list[ColumnElement[bool]],
    max_points: int | None,
    session: Session,
) -> Iterator[tuple[int, list[Point]]]:
    """One query for the points of every series `where` selects, each series told apart
    by `series_column` (trial or metric key): (its value, its points in step order)."""
    rows = (
        session.connection()
        .execute(
            select(series_column, _points.steps_completed, _points.value)
            .where(*where)
            .order_by(series_column, _points.steps_completed)
        )
        .all()
    )  # one fetchall: iterating the result fetches a row at a time
    for series_id, rows_of_one in groupby(rows, itemgetter(0)):
        points = [(step, value) for _, step, value in rows_of_one]
        yield series_id, points if max_points is None else downsample(points, max_points)


def _columns(points: list[Point]) -> stored_curves.Columns:
    """A series as api.Curve's columns, written directly: a pydantic model per curve cost
    more than reading its points. Values are finite or None (the store keeps no NaN)."""
    steps = json.dumps([s for s, _ in points], separators=(",", ":"))
    values = json.dumps([v for _, v in points], separators=(",", ":"), allow_nan=False)
    return stored_curves.Columns(steps, values)


def _curve_json(trial_id: int, columns: stored_curves.Columns) -> bytes:
    """An api.Curve as JSON, from its columns."""
    return f'{{"trial_id":{trial_id},"steps":{columns.steps},"values":{columns.values}}}'.encode()


def _series(trial_id: int, name: str, group: str, points: list[Point]) -> api.MetricSeries:
    # Validated from dicts: half the cost of building a MetricPoint a point.
    return api.MetricSeries.model_validate(
        {
            "trial_id": trial_id,
            "name": name,
            "group": group,
            "points": [{"steps_completed": s, "value": v} for s, v in points],
        }
    )
