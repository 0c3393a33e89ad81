"""The master's write path for metrics on both databases: points that come after a metric's
last stored step are inserted and folded into its summary, and points resent for stored
steps replace the values and recount the summary (metric_store.py takes a different
statement for each)."""

from __future__ import annotations

import math

import pytest
from sqlalchemy import select, update

from shipyard.server import orm
from shipyard.server.db import Database
from shipyard.server.services import experiments, metrics, trial_json
from tests.server.test_fixed_queries import add_experiment, experiment_trials


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db(request, tmp_path):
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'shipyard.db'}"
    else:
        url = request.getfixturevalue("postgres_url")
    database = Database(url)
    database.migrate()
    yield database
    database.close()


def send(db: Database, trial_id: int, steps: list[int], losses: list[float]) -> None:
    with db.write() as s:
        trial = metrics.reporting_trial(trial_id, session=s)
        block = {"group": "training", "steps": steps, "metrics": {"loss": losses}}
        metrics.ingest(trial, 1, {"columns": [block]}, keys=metrics.MetricKeyCache(), session=s)


def stored(db: Database, trial_id: int) -> tuple[dict[int, float | None], dict]:
    with db.read() as s:
        points = dict(
            s.execute(
                select(orm.MetricPoint.steps_completed, orm.MetricPoint.value)
                .join(orm.MetricKey, orm.MetricKey.id == orm.MetricPoint.key_id)
                .where(orm.MetricPoint.trial_id == trial_id, orm.MetricKey.name == "loss")
            ).all()
        )
        found = metrics.summaries([trial_id], smaller_is_better=True, session=s)[trial_id]
    [summary] = [m for m in found if (m.name, m.group) == ("loss", "training")]
    return points, summary.model_dump()


def test_new_steps_are_folded_in_and_resent_steps_replace_values_and_recount(db):
    exp_id = add_experiment(db, 1)  # loss = 1/step at steps 1..29 (trial 0)
    with db.write() as s:
        trial_id = s.scalars(select(orm.Trial.id).where(orm.Trial.experiment_id == exp_id)).one()
        s.execute(
            update(orm.Trial).where(orm.Trial.id == trial_id).values(state="RUNNING", run_id=1)
        )

    send(db, trial_id, [30, 31], [5.0, math.nan])  # after the last stored step
    points, summary = stored(db, trial_id)
    assert (points[30], points[31]) == (5.0, None)
    assert summary["count"] == 31 and (summary["last_step"], summary["last"]) == (31, None)
    assert (summary["min"], summary["max"]) == (1 / 29, 5.0)

    send(db, trial_id, [29, 30], [-1.0, 0.5])  # resent: a rerun after a restart
    points, summary = stored(db, trial_id)
    assert (points[29], points[30], points[31]) == (-1.0, 0.5, None)
    assert len(points) == summary["count"] == 31
    assert (summary["min"], summary["max"], summary["last_step"]) == (-1.0, 1.0, 31)


def test_a_trial_whose_latest_value_is_nan_is_answered_each_time_and_not_kept(db):
    # (SQLite stores a NaN as NULL; PostgreSQL keeps it.)
    exp_id = add_experiment(db, 2)
    with db.write() as s:
        first = s.scalars(select(orm.Trial.id).where(orm.Trial.experiment_id == exp_id)).first()
        key = s.scalar(select(orm.MetricKey.id).where(orm.MetricKey.name == "val_loss"))
        s.get(orm.MetricSummary, (first, key)).last = float("nan")
    with db.read() as s:
        exp = experiments.get(exp_id, session=s)
        answers = [experiment_trials(exp, s) for _ in range(3)]
        kept_before = trial_json._kept_count
        experiment_trials(exp, s)
        assert trial_json._kept_count == kept_before  # a NaN key would never be found again
    assert answers[0] == answers[1] == answers[2]
    assert answers[0][0].latest_validation is None  # NaN is null in JSON


def test_steps_beyond_32_bits_and_extreme_values_are_stored_as_sent(db):
    # On PostgreSQL new points go by binary COPY: each field's width and byte order matter.
    exp_id = add_experiment(db, 1)
    with db.write() as s:
        trial_id = s.scalars(select(orm.Trial.id).where(orm.Trial.experiment_id == exp_id)).one()
        s.execute(
            update(orm.Trial).where(orm.Trial.id == trial_id).values(state="RUNNING", run_id=1)
        )
    steps = [2**31, 2**40, metrics.MAX_STEP]
    values = [-1.5e308, 5e-324, 0.1]
    send(db, trial_id, steps, values)
    points, summary = stored(db, trial_id)
    assert [points[step] for step in steps] == values
    assert (summary["last_step"], summary["min"], summary["max"]) == (
        metrics.MAX_STEP,
        -1.5e308,
        1.0,
    )
