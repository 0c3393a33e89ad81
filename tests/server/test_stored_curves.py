"""An ended trial's downsampled curve is computed once and stored in the database: a master
started again serves it without reading the points, and a trial whose points changed is
never answered with a curve of its older points. A real master over HTTP on SQLite and on
PostgreSQL; the services on a real database for what no API does (an ended trial that gets
points again)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import NamedTuple

import pytest
from sqlalchemy import delete, func, select, text, update

from shipyard.common import api
from shipyard.server import orm
from shipyard.server.db import Database
from shipyard.server.services import metrics
from shipyard.server.services.metric_series import chart_points
from shipyard.server.workers.curve_keeper import CurveKeeper
from tests.e2e.master import Master
from tests.fixtures.poll import poll
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


class Ended(NamedTuple):
    master: Master
    db: Database
    experiment: dict  # as GET /experiments/{id} gives it once ended


@pytest.fixture
def ended(tmp_path) -> Iterator[Ended]:
    """A real master on SQLite with CONFIG's experiment ended, and the master's database."""
    url = f"sqlite:///{tmp_path / 'shipyard.db'}"
    master = Master(tmp_path / "home", db_url=url).start()
    db = Database(url)
    try:
        exp = master.create(CONFIG, CODE)
        yield Ended(master, db, master.wait(exp["id"], timeout=90))
    finally:
        master.stop()
        db.close()


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


def test_whole_series_asked_for_are_not_stored(ended):
    """The rungs view reads whole series (max_points up to 100,000): computed each time,
    or the table would hold every point a second time."""
    r = ended.master.http.get(
        f"/experiments/{ended.experiment['id']}/curves", params={**LOSS, "max_points": 100_000}
    )
    assert r.status_code == 200 and [len(c["steps"]) for c in r.json()] == [40] * 2, r.text
    with ended.db.read() as s:
        stored = select(func.count()).where(orm.StoredCurve.max_points == 100_000)
        assert s.scalar(stored) == 0


def test_curves_that_cannot_be_stored_are_answered_all_the_same(ended):
    with ended.db.write() as s:  # every store fails, as on a full disk
        s.execute(
            text(
                "CREATE TRIGGER full_disk BEFORE INSERT ON stored_curves "
                "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END"
            )
        )
    answer = curves(ended.master, ended.experiment["id"])
    trial_ids = sorted(t["id"] for t in ended.experiment["trials"])
    assert [c["trial_id"] for c in answer] == trial_ids
    assert stored_trial_ids(ended.db) == []


def test_the_experiments_trials_are_what_each_trials_own_page_says(ended):
    """GET /experiments/{id} reads its trials as rows, GET /trials/{id} as an ORM object:
    the same fields, the same values."""
    fields = set(api.TrialSummary.model_fields)
    for trial in ended.experiment["trials"]:
        assert set(trial) == fields
        assert trial["best_validation"] is not None
        own = ended.master.trial(trial["id"])
        assert {field: own[field] for field in fields} == trial


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
        metrics.ingest(
            reporting, 1, {"reports": [report]}, keys=metrics.MetricKeyCache(), session=s
        )
    with db.write() as s:
        s.get(orm.Trial, reopened).state = "COMPLETED"
    again = read_curves(db, exp_id)
    assert (again[0].steps[-1], again[0].values[-1]) == (500, 42.0)
    assert again[1:] == first[1:]
    assert read_curves(db, exp_id) == again  # and the new curve is the one stored now


def searcher_curves_stored(db: Database) -> dict[int, int]:
    """Trial id -> max_points of its stored val_loss (validation) curve."""
    sc, mk = orm.StoredCurve, orm.MetricKey
    with db.read() as s:
        rows = s.execute(
            select(sc.trial_id, sc.max_points)
            .join(mk, mk.id == sc.key_id)
            .where(mk.name == "val_loss", mk.group == "validation")
        )
        return dict(rows.all())


def test_the_master_stores_ended_trials_curves_before_a_page_asks(ended):
    master, db = ended.master, ended.db
    trial_ids = sorted(t["id"] for t in ended.experiment["trials"])
    poll(
        lambda: searcher_curves_stored(db),
        "every trial's searcher curve stored",
        until=lambda stored: sorted(stored) == trial_ids,
        timeout_s=30,
        every_s=0.2,
    )
    # as the experiment page asks: its searcher metric, the points the master picks
    assert searcher_curves_stored(db) == {t: chart_points(2) for t in trial_ids}
    r = master.http.get(
        f"/experiments/{ended.experiment['id']}/curves", params={"name": "val_loss"}
    )
    assert r.status_code == 200, r.text
    for curve in r.json():
        points = master.metrics(curve["trial_id"], "validation", "val_loss")
        assert as_pairs(curve) == [list(p) for p in points] != []


def test_the_keeper_stores_each_ended_trials_searcher_curve_once(db):
    exp_id = add_experiment(db, 6)
    with db.write() as s:  # ended as the master ends trials, but for one still running
        of_experiment = orm.Trial.experiment_id == exp_id
        s.execute(update(orm.Trial).where(of_experiment).values(ended_at=orm.utcnow()))
        trial_ids = list(s.scalars(select(orm.Trial.id).where(of_experiment)))
        running = s.get(orm.Trial, trial_ids[0])
        running.state, running.ended_at = "RUNNING", None
    keeper = CurveKeeper(db)
    assert keeper.keep_up() >= 5  # (PostgreSQL's database is the session's: more may end)
    assert keeper.keep_up() == 0  # looked at again (a trial may end late), nothing new
    stored = searcher_curves_stored(db)
    assert {t: stored.get(t) for t in trial_ids} == {
        t: None if t == running.id else chart_points(6) for t in trial_ids
    }


def test_a_trial_whose_end_commits_after_a_look_has_its_curve_stored_by_the_next(db):
    exp_id = add_experiment(db, 3)
    with db.write() as s:
        trial_ids = sorted(s.scalars(select(orm.Trial.id).where(orm.Trial.experiment_id == exp_id)))
        s.execute(
            update(orm.Trial).where(orm.Trial.id != trial_ids[0]).values(ended_at=orm.utcnow())
        )
        late = s.get(orm.Trial, trial_ids[0])
        late.state, late.ended_at = "RUNNING", None
    keeper = CurveKeeper(db)
    keeper.keep_up()
    assert set(searcher_curves_stored(db)) >= set(trial_ids[1:])
    assert trial_ids[0] not in searcher_curves_stored(db)
    with db.write() as s:  # its end stamped before that look, committed after it
        late = s.get(orm.Trial, trial_ids[0])
        late.state, late.ended_at = "COMPLETED", orm.utcnow() - timedelta(seconds=20)
    keeper.keep_up()
    assert trial_ids[0] in searcher_curves_stored(db)


def test_a_restarted_keeper_stores_again_only_the_curve_whose_points_changed(db):
    exp_id = add_experiment(db, 4)
    with db.write() as s:
        of_experiment = orm.Trial.experiment_id == exp_id
        s.execute(update(orm.Trial).where(of_experiment).values(ended_at=orm.utcnow()))
        trial_ids = sorted(s.scalars(select(orm.Trial.id).where(of_experiment)))
    CurveKeeper(db).keep_up()
    before = stored_versions(db, trial_ids)
    assert before == trial_versions(db, trial_ids)
    with db.write() as s:  # a trial that got points again and ended again
        s.get(orm.Trial, trial_ids[1]).metrics_version += 1
    CurveKeeper(db).keep_up()  # a master started again: it looks at every experiment
    after = stored_versions(db, trial_ids)
    assert after == trial_versions(db, trial_ids)
    assert after == before | {trial_ids[1]: before[trial_ids[1]] + 1}


def stored_versions(db: Database, trial_ids: list[int]) -> dict[int, int]:
    """Trial id -> the metrics_version its stored val_loss curve was computed at."""
    sc, mk = orm.StoredCurve, orm.MetricKey
    with db.read() as s:
        rows = s.execute(
            select(sc.trial_id, sc.metrics_version)
            .join(mk, mk.id == sc.key_id)
            .where(mk.name == "val_loss", sc.trial_id.in_(trial_ids))
        )
        return dict(rows.all())


def trial_versions(db: Database, trial_ids: list[int]) -> dict[int, int]:
    with db.read() as s:
        rows = s.execute(
            select(orm.Trial.id, orm.Trial.metrics_version).where(orm.Trial.id.in_(trial_ids))
        )
        return dict(rows.all())


@pytest.mark.parametrize(
    ("trials", "points"),
    [(1, 400), (500, 400), (501, 256), (1_000, 128), (10_000, 16), (1_000_000, 16)],
)
def test_a_chart_of_more_trials_keeps_fewer_points_a_trial(trials, points):
    assert chart_points(trials) == points
