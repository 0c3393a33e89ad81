"""The reads the web UI makes most stay a fixed number of queries however many experiments
and trials there are: the experiment list (once a few queries per experiment) and an
experiment's curves (one query for every trial's points, and only the live trials' once
the ended ones' curves are stored). On a real SQLite file, with the master's own write path
for the metrics."""

from __future__ import annotations

from contextlib import contextmanager

import pytest
from sqlalchemy import delete, event, select

from shipyard.common import api
from shipyard.common.config import load_config
from shipyard.server import orm
from shipyard.server.db import Database
from shipyard.server.services import (
    experiment_records,
    experiments,
    metric_series,
    metrics,
    stored_curves,
    trial_json,
    views,
    workspaces,
)


@pytest.fixture
def db(tmp_path):
    database = Database(f"sqlite:///{tmp_path / 'shipyard.db'}")
    database.migrate()
    yield database
    database.close()


def add_experiment(db, n_trials: int, *, metric: str = "val_loss", smaller: bool = True) -> int:
    """An ended experiment whose trials reported a curve and validations, as trials do."""
    keys = metrics.MetricKeyCache()
    with db.write() as s:
        project = workspaces.default_project(session=s)
        ws = project.workspace_id
        config = load_config(
            "entrypoint: python3 train.py\n"
            f"searcher: {{name: random, metric: {metric}, max_trials: 1000, "
            f"smaller_is_better: {'true' if smaller else 'false'}}}"
        ).to_json_dict()
        exp = orm.Experiment(
            workspace_id=ws,
            project_id=project.id,
            name=f"{n_trials} trials",
            config=config,
            config_yaml="",
            state="COMPLETED",
            seed=1,
            checkpoint_base="/nowhere",
        )
        s.add(exp)
        s.flush()
        for i in range(n_trials):
            trial = orm.Trial(
                experiment_id=exp.id,
                workspace_id=ws,
                request_id=f"r{i:04d}",
                hparams={"i": i},
                seed=i,
                state="COMPLETED" if i % 3 else "ERRORED",
            )
            s.add(trial)
            s.flush()
            reports = [
                {"group": "training", "steps_completed": step, "metrics": {"loss": i + 1 / step}}
                for step in range(1, 30)
            ] + [
                {"group": "validation", "steps_completed": 10, "metrics": {metric: (i * 7) % 5}},
                {"group": "validation", "steps_completed": 20, "metrics": {"other": -i}},
            ]
            reporting = metrics.reporting_trial(trial.id, session=s)
            metrics.ingest(reporting, 0, {"reports": reports}, keys=keys, session=s)
        return exp.id


def experiment_trials(exp, s) -> list[api.TrialSummary]:
    """The experiment's trials as GET /experiments/{id}/trials answers them."""
    return [
        api.TrialSummary.model_validate_json(t.json)
        for t in trial_json.experiment_trials(exp, session=s)
    ]


@contextmanager
def counted(db):
    statements: list[str] = []

    def count(_conn, _cursor, statement, *_args) -> None:
        if not statement.startswith("BEGIN"):
            statements.append(statement)

    event.listen(db.engine, "before_cursor_execute", count)
    try:
        yield statements
    finally:
        event.remove(db.engine, "before_cursor_execute", count)


def list_all(db):
    with db.read() as s:
        page, total = experiment_records.list_page(
            state=None, archived=None, limit=1000, offset=0, visible=None, session=s
        )
        assert total == len(page)
        return page


def test_the_experiment_list_says_what_each_experiment_says_in_a_fixed_number_of_queries(db):
    add_experiment(db, 3)
    add_experiment(db, 1, metric="acc", smaller=False)
    with counted(db) as few:
        small = list_all(db)
    for n in (5, 12, 0, 7):
        add_experiment(db, n, smaller=n % 2 == 0)
    with counted(db) as many:
        large = list_all(db)
    assert len(small) == 2 and len(large) == 6
    assert len(many) == len(few) <= 5

    with db.read() as s:  # the same summary the experiment's own page shows
        for summary in large:
            exp = experiments.get(summary.id, session=s)
            detail = api.ExperimentDetail.model_validate_json(
                views.experiment_detail(exp, session=s)
            )
            assert summary.model_dump() == {
                field: value
                for field, value in detail.model_dump().items()
                if field in type(summary).model_fields
            }
    by_trials = {e.num_trials: e for e in large}
    assert by_trials[12].trial_states == {"COMPLETED": 8, "ERRORED": 4}
    assert by_trials[12].best_validation == 0  # smaller is better: the least of (i*7) % 5
    assert by_trials[7].best_validation == 4  # larger is better
    assert by_trials[0].best_validation is None and by_trials[0].best_trial_id is None


def test_the_list_reads_an_ended_experiments_trials_once_and_a_live_ones_every_time(db):
    ended, killed = add_experiment(db, 4), add_experiment(db, 2)
    with db.write() as s:  # killed: the experiment has ended, one of its trials not yet
        s.get(orm.Experiment, killed).state = "CANCELED"
        stopping = s.scalars(select(orm.Trial.id).where(orm.Trial.experiment_id == killed)).first()
        s.get(orm.Trial, stopping).state = "RUNNING"
    first = {e.id: e for e in list_all(db)}
    assert first[killed].trial_states["RUNNING"] == 1
    with db.write() as s:
        s.get(orm.Trial, stopping).state = "CANCELED"
    with counted(db) as statements:
        second = {e.id: e for e in list_all(db)}
    assert "RUNNING" not in second[killed].trial_states
    assert second[killed].trial_states["CANCELED"] == 1
    assert second[ended] == first[ended]
    reads_of_trials = [q for q in statements if "trials.experiment_id" in q]
    assert len(reads_of_trials) == 2  # the killed one's states and best, not the ended one's
    with counted(db) as statements:
        third = {e.id: e for e in list_all(db)}
    assert not [q for q in statements if "trials.experiment_id" in q]  # both have ended now
    assert third == second


def curves(db, exp_id: int) -> list[api.Curve]:
    """As GET .../curves does: read, then store the ended trials' curves computed."""
    with db.read() as s:
        found = metric_series.curves(
            exp_id, name="loss", group="training", max_points=10, session=s
        )
    with db.write() as s:
        stored_curves.save(found.to_store, session=s)
    return [api.Curve.model_validate_json(data) for data in found.bodies]


def forget_stored_curves(db) -> None:
    with db.write() as s:
        s.execute(delete(orm.StoredCurve))


def test_an_experiments_curves_take_the_same_queries_for_2_trials_as_for_40(db):
    small, large = add_experiment(db, 2), add_experiment(db, 40)
    with counted(db) as few:
        assert len(curves(db, small)) == 2
    with counted(db) as many:
        found = curves(db, large)
    assert len(found) == 40
    # reading: the metric's key, the trials, the stored curves, every trial's points;
    # storing: a delete and an insert
    assert len(many) == len(few) <= 6
    assert all(len(s.steps) == len(s.values) <= 10 for s in found)


def test_ended_trials_curves_are_stored_and_a_live_trials_curve_is_read_anew(db):
    exp_id = add_experiment(db, 6)
    with db.write() as s:
        trials = select(orm.Trial).where(orm.Trial.experiment_id == exp_id)
        live = s.scalars(trials.order_by(orm.Trial.id)).first()
        live.state, live.run_id = "RUNNING", 1
        live_id = live.id
    first = curves(db, exp_id)
    with db.write() as s:  # the live trial reports on, and far beyond its earlier steps
        reporting = metrics.reporting_trial(live_id, session=s)
        report = {"group": "training", "steps_completed": 500, "metrics": {"loss": 42.0}}
        metrics.ingest(
            reporting, 1, {"reports": [report]}, keys=metrics.MetricKeyCache(), session=s
        )
    with counted(db) as statements:
        second = curves(db, exp_id)
    assert not any(q.startswith(("INSERT", "DELETE")) for q in statements)  # nothing new
    forget_stored_curves(db)
    assert second == curves(db, exp_id)  # what a read from the points says
    assert second[0].trial_id == live_id
    assert (second[0].steps[-1], second[0].values[-1]) == (500, 42.0)
    assert second[1:] == first[1:]
    points_query = next(q for q in statements if "metric_points" in q)
    assert "trials" not in points_query  # only the live trial's points were read


def test_an_experiments_trials_take_the_same_queries_for_2_trials_as_for_40(db):
    small, large = add_experiment(db, 2), add_experiment(db, 40)
    with db.read() as s:
        exps = [experiments.get(exp_id, session=s) for exp_id in (small, large)]
    with counted(db) as few, db.read() as s:
        assert len(experiment_trials(exps[0], s)) == 2
    with counted(db) as many, db.read() as s:
        assert len(experiment_trials(exps[1], s)) == 40
    assert len(many) == len(few) <= 2  # the trials' columns, their searcher metric


def test_an_experiments_trials_read_as_rows_are_the_summaries_of_its_trial_objects(db):
    exp_id = add_experiment(db, 5)
    with db.write() as s:  # one waits for the searcher at a rung: end_reason reads more columns
        waiting = s.scalars(select(orm.Trial).where(orm.Trial.experiment_id == exp_id)).first()
        waiting.state, waiting.searcher_info = "PAUSED", {"rung": 2}
        waiting.waiting_for_searcher, waiting.searcher_time, waiting.target_length = True, 8, 8
    with db.read() as s:
        exp = experiments.get(exp_id, session=s)
        objects = s.scalars(
            select(orm.Trial).where(orm.Trial.experiment_id == exp_id).order_by(orm.Trial.id)
        )
        from_objects = views.trial_summaries(exp, list(objects), session=s)
        from_rows = experiment_trials(exp, s)
    assert from_rows == from_objects
    assert from_rows[0].end_reason == "waiting for the searcher at 8" and from_rows[0].rung == 2
    assert [t.best_validation for t in from_rows] == [0, 2, 4, 1, 3]  # (i * 7) % 5


def test_an_ended_trials_kept_summary_follows_its_row_and_its_searcher_metric(db):
    exp_id = add_experiment(db, 3)
    with db.read() as s:
        exp = experiments.get(exp_id, session=s)
        first = trial_json.experiment_trials(exp, session=s)
        again = trial_json.experiment_trials(exp, session=s)
    assert [t.json for t in again] == [t.json for t in first]
    assert all(a.json is b.json for a, b in zip(again, first, strict=True))  # kept, not rebuilt

    ended, live = first[1].id, first[2].id
    with db.write() as s:  # its checkpoint moved (one deleted), its best changed; another runs
        s.get(orm.Trial, ended).latest_checkpoint = "c0ffee"
        s.get(orm.Trial, live).state = "RUNNING"
        s.get(orm.Trial, live).steps_completed = 77
        key = s.scalar(select(orm.MetricKey.id).where(orm.MetricKey.name == "val_loss"))
        summary = s.get(orm.MetricSummary, (ended, key))
        summary.min = summary.last = -1.5
    with db.read() as s:
        now = experiment_trials(experiments.get(exp_id, session=s), s)
    assert now[1].latest_checkpoint == "c0ffee"
    assert now[1].best_validation == now[1].latest_validation == -1.5
    assert (now[2].state, now[2].steps_completed, now[2].end_reason) == ("RUNNING", 77, None)
    assert now[0] == api.TrialSummary.model_validate_json(first[0].json)  # unchanged
