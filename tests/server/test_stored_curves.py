"""An ended trial's downsampled curve is computed once and stored in the database: a master
started again serves it without reading the points, and a trial whose points changed is
never answered with a curve of its older points. A real master over HTTP on SQLite and on
PostgreSQL; the services on a real database for what no API does (an ended trial that gets
points again)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import delete, func, select, text

from shipyard.common import api
from shipyard.server import orm
from shipyard.server.db import Database
from shipyard.server.services import metrics
from tests.e2e.master import Master
from tests.server.test_fixed_queries import add_experiment
from tests.server.test_fixed_queries import curves as read_curves

CODE = Path(__file__).parents[1] / "e2e" / "trial_code"  # steps.py: a loss a step

CONFIG = """
name: stored-curves
entrypoint: python3 steps.py
hyperparameters:
  x: {type: double, minval: -1, maxval: 1}
  steps: 40
  ckpt_every: 5
searcher: {name: random, metric: val_loss, max_trials: 2, max_concurrent_trials: 2}
max_restarts: 0
"""

LOSS = {"name": "loss", "group": "training", "max_points": 10}


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request, tmp_path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'shipyard.db'}"
    return request.getfixturevalue("postgres_url")


@pytest.fixture
def db(db_url):
    database = Database(db_url)
    database.migrate()
    yield database
    database.close()


def curves(master: Master, exp_id: int) -> list[dict]:
    r = master.http.get(f"/experiments/{exp_id}/curves", params=LOSS)
    assert r.status_code == 200, r.text
    return r.json()


def fresh(master: Master, trial_id: int) -> list[list]:
    """The trial's loss downsampled from its points now, as [step, value] pairs."""
    r = master.http.get(f"/trials/{trial_id}/metrics", params=LOSS)
    assert r.status_code == 200, r.text
    return [[p["steps_completed"], p["value"]] for s in r.json() for p in s["points"]]


def as_pairs(curve: dict) -> list[list]:
    return [list(pair) for pair in zip(curve["steps"], curve["values"], strict=True)]


def stored_trial_ids(db: Database) -> list[int]:
    """The trials that have a stored loss curve of LOSS's max_points."""
    sc, mk = orm.StoredCurve, orm.MetricKey
    with db.read() as s:
        return list(
            s.scalars(
                select(sc.trial_id)
                .join(mk, mk.id == sc.key_id)
                .where(mk.name == "loss", mk.group == "training", sc.max_points == 10)
                .order_by(sc.trial_id)
            )
        )


def test_a_restarted_master_serves_the_curves_it_stored_without_the_points(db, db_url, tmp_path):
    master = Master(tmp_path / "home", db_url=db_url).start()
    try:
        exp = master.create(CONFIG, CODE)
        done = master.wait(exp["id"], timeout=90)
        assert done["state"] == "COMPLETED", done
        trial_ids = sorted(t["id"] for t in done["trials"])
        before = curves(master, exp["id"])
        assert [c["trial_id"] for c in before] == trial_ids
        for curve in before:
            assert len(curve["steps"]) <= 10 and curve["steps"][-1] == 40
            assert as_pairs(curve) == fresh(master, curve["trial_id"])
        assert stored_trial_ids(db) == trial_ids

        master.stop()
        with db.write() as s:  # now only the stored curves can answer
            s.execute(delete(orm.MetricPoint).where(orm.MetricPoint.trial_id.in_(trial_ids)))
        master.start()
        assert master.metrics(trial_ids[0], "training", "loss") == []  # the points are gone
        assert curves(master, exp["id"]) == before
    finally:
        master.stop()


def test_whole_series_asked_for_are_not_stored(tmp_path):
    """The rungs view reads whole series (max_points up to 100,000): computed each time,
    or the table would hold every point a second time."""
    url = f"sqlite:///{tmp_path / 'shipyard.db'}"
    master = Master(tmp_path / "home", db_url=url).start()
    db = Database(url)
    try:
        exp = master.create(CONFIG, CODE)
        master.wait(exp["id"], timeout=90)
        r = master.http.get(
            f"/experiments/{exp['id']}/curves", params={**LOSS, "max_points": 100_000}
        )
        assert r.status_code == 200 and [len(c["steps"]) for c in r.json()] == [40] * 2, r.text
        with db.read() as s:
            assert s.scalar(select(func.count()).select_from(orm.StoredCurve)) == 0
    finally:
        master.stop()
        db.close()


def test_curves_that_cannot_be_stored_are_answered_all_the_same(tmp_path):
    url = f"sqlite:///{tmp_path / 'shipyard.db'}"
    master = Master(tmp_path / "home", db_url=url).start()
    db = Database(url)
    try:
        exp = master.create(CONFIG, CODE)
        done = master.wait(exp["id"], timeout=90)
        with db.write() as s:  # every store fails, as on a full disk
            s.execute(
                text(
                    "CREATE TRIGGER full_disk BEFORE INSERT ON stored_curves "
                    "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END"
                )
            )
        answer = curves(master, exp["id"])
        assert [c["trial_id"] for c in answer] == sorted(t["id"] for t in done["trials"])
        assert stored_trial_ids(db) == []
    finally:
        master.stop()
        db.close()


def test_the_experiments_trials_are_what_each_trials_own_page_says(tmp_path):
    """GET /experiments/{id} reads its trials as rows, GET /trials/{id} as an ORM object:
    the same fields, the same values."""
    master = Master(tmp_path / "home").start()
    try:
        exp = master.create(CONFIG, CODE)
        done = master.wait(exp["id"], timeout=90)
        fields = set(api.TrialSummary.model_fields)
        for trial in done["trials"]:
            assert set(trial) == fields
            assert trial["best_validation"] is not None
            own = master.trial(trial["id"])
            assert {field: own[field] for field in fields} == trial
    finally:
        master.stop()


def test_a_paused_trial_that_resumes_has_its_new_points_in_its_curve(tmp_path):
    master = Master(tmp_path / "home", slots=1).start()
    try:
        config = CONFIG.replace("steps: 40", "steps: 60\n  sleep: 0.05")
        config = config.replace("max_trials: 2, max_concurrent_trials: 2", "max_trials: 1")
        exp = master.create(config, CODE)
        trial_id = exp["trials"][0]["id"]
        master.wait_for(lambda: master.trial(trial_id)["steps_completed"] >= 10, what="steps")
        master.http.post(f"/experiments/{exp['id']}/pause").raise_for_status()
        master.wait_for(lambda: master.trial(trial_id)["state"] == "PAUSED", what="paused")
        [paused] = curves(master, exp["id"])
        assert paused["steps"][-1] == master.trial(trial_id)["steps_completed"] < 60

        master.http.post(f"/experiments/{exp['id']}/activate").raise_for_status()
        assert master.wait(exp["id"], timeout=90)["state"] == "COMPLETED"
        [resumed] = curves(master, exp["id"])
        assert resumed["steps"][-1] == 60
        assert as_pairs(resumed) == fresh(master, trial_id)
    finally:
        master.stop()


def test_a_stored_curve_is_not_served_once_its_trial_has_new_points(db):
    exp_id = add_experiment(db, 3)  # ended trials: their curves are stored
    first = read_curves(db, exp_id)
    reopened = first[0].trial_id
    # No API gives an ended trial points again (its reports are refused); a trial reopened
    # by some future feature would, and must not be answered with its old curve.
    with db.write() as s:
        trial = s.get(orm.Trial, reopened)
        trial.state, trial.run_id = "RUNNING", 1
    with db.write() as s:
        reporting = metrics.reporting_trial(reopened, session=s)
        report = {"group": "training", "steps_completed": 500, "metrics": {"loss": 42.0}}
        metrics.ingest(reporting, 1, [report], keys=metrics.MetricKeyCache(), session=s)
    with db.write() as s:
        s.get(orm.Trial, reopened).state = "COMPLETED"
    again = read_curves(db, exp_id)
    assert (again[0].steps[-1], again[0].values[-1]) == (500, 42.0)
    assert again[1:] == first[1:]
    assert read_curves(db, exp_id) == again  # and the new curve is the one stored now
