"""What the web UI reads to draw an experiment's learning curves, from a real master whose
trials reported real metrics: every trial's curve of one metric, downsampled on the server
with its spikes, dips and gaps kept; the metric names to choose from; one trial's series."""

from __future__ import annotations

import pytest

from tests.e2e.master import Master

STEPS = 200
SPIKE, DIP = 77, 150  # steps where the curve jumps up and down
GAP = range(115, 146)  # steps whose loss is NaN (stored as null)

CURVE_PY = f"""
import math
import shipyard.core

with shipyard.core.init() as ctx:
    k = ctx.info.hparams["k"]
    for step in range(1, {STEPS} + 1):
        loss = k + 1.0 / step
        if step == {SPIKE}:
            loss = 100.0 + k
        if step == {DIP}:
            loss = -100.0 - k
        if {GAP.start} <= step < {GAP.stop}:
            loss = math.nan
        ctx.train.report_training_metrics(step, {{"loss": loss}})
        if step % 50 == 0:
            ctx.train.report_validation_metrics(step, {{"val_loss": k / step}})
"""

CONFIG = """
name: curves
entrypoint: python3 curve.py
hyperparameters:
  k: {type: categorical, vals: [1, 2, 3]}
searcher: {name: grid, metric: val_loss, max_concurrent_trials: 2}
max_restarts: 0
"""


@pytest.fixture(scope="module")
def master(tmp_path_factory):
    m = Master(tmp_path_factory.mktemp("curves") / "home", slots=2).start()
    yield m
    m.stop()


@pytest.fixture(scope="module")
def experiment(master, tmp_path_factory) -> dict:
    code = tmp_path_factory.mktemp("curve-code")
    (code / "curve.py").write_text(CURVE_PY)
    exp = master.create(CONFIG, code)
    done = master.wait(exp["id"], timeout=120)
    assert done["state"] == "COMPLETED", done
    return done


def curves(master, exp_id: int, **params):
    return master.http.get(f"/experiments/{exp_id}/curves", params=params)


def test_every_trial_has_its_curve_in_trial_order_with_all_points_when_short(master, experiment):
    r = curves(master, experiment["id"], name="val_loss")  # group validation by default
    assert r.status_code == 200, r.text
    series = r.json()
    trial_ids = sorted(t["id"] for t in experiment["trials"])
    assert [s["trial_id"] for s in series] == trial_ids
    for s in series:
        assert set(s) == {"trial_id", "steps", "values"}  # columns, not an object a point
        assert s["steps"] == [50, 100, 150, 200]
        # the same points the trial's own series has
        own = master.metrics(s["trial_id"], "validation", "val_loss")
        assert list(zip(s["steps"], s["values"], strict=True)) == own


def test_a_long_curve_is_downsampled_keeping_its_ends_spikes_dips_and_gaps(master, experiment):
    r = curves(master, experiment["id"], name="loss", group="training", max_points=22)
    assert r.status_code == 200, r.text
    series = r.json()
    assert len(series) == 3
    for s in series:
        k = next(t["hparams"]["k"] for t in experiment["trials"] if t["id"] == s["trial_id"])
        points = list(zip(s["steps"], s["values"], strict=True))
        assert len(points) <= 22
        steps = [step for step, _ in points]
        assert steps == sorted(steps)
        assert points[0] == (1, pytest.approx(k + 1.0))
        assert points[-1] == (STEPS, pytest.approx(k + 1.0 / STEPS))
        assert (SPIKE, pytest.approx(100.0 + k)) in points
        assert (DIP, pytest.approx(-100.0 - k)) in points
        assert any(value is None and step in GAP for step, value in points)  # the gap shows

    whole = curves(master, experiment["id"], name="loss", group="training").json()
    assert [len(s["steps"]) for s in whole] == [STEPS] * 3  # 200 <= the default of 400


def test_the_trials_own_series_can_be_downsampled_too(master, experiment):
    trial_id = experiment["trials"][0]["id"]
    r = master.http.get(
        f"/trials/{trial_id}/metrics", params={"group": "training", "max_points": 10}
    )
    assert r.status_code == 200, r.text
    [loss] = r.json()
    assert loss["name"] == "loss" and len(loss["points"]) <= 10
    assert loss["points"][0]["steps_completed"] == 1
    assert loss["points"][-1]["steps_completed"] == STEPS
    everything = master.http.get(f"/trials/{trial_id}/metrics").json()
    assert {(s["name"], len(s["points"])) for s in everything} == {
        ("loss", STEPS),
        ("val_loss", 4),
    }


def test_the_metric_names_of_an_experiment_sorted_by_group_then_name(master, experiment):
    r = master.http.get(f"/experiments/{experiment['id']}/metric-names")
    assert r.status_code == 200, r.text
    assert r.json() == [
        {"name": "loss", "group": "training"},
        {"name": "val_loss", "group": "validation"},
    ]


def test_a_metric_no_trial_reported_has_no_curves(master, experiment):
    r = curves(master, experiment["id"], name="accuracy")
    assert r.status_code == 200 and r.json() == []
    r = curves(master, experiment["id"], name="loss")  # loss is a training metric
    assert r.status_code == 200 and r.json() == []


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"name": "loss", "max_points": 1}, "max_points"),
        ({"name": "loss", "max_points": 100_001}, "max_points"),
        ({"name": "loss", "max_points": "many"}, "max_points"),
        ({"name": "loss", "group": "has space"}, "group"),
        ({}, "name"),
    ],
)
def test_bad_parameters_are_400_naming_the_field(master, experiment, params, field):
    r = curves(master, experiment["id"], **params)
    assert r.status_code == 400, r.text
    assert [d["path"] for d in r.json()["error"]["details"]] == [f"query.{field}"]


def test_bad_max_points_of_a_trials_series_is_400(master, experiment):
    trial_id = experiment["trials"][0]["id"]
    r = master.http.get(f"/trials/{trial_id}/metrics", params={"max_points": 0})
    assert r.status_code == 400
    assert r.json()["error"]["details"][0]["path"] == "query.max_points"


def test_an_unknown_experiment_is_404(master):
    for path in ("/experiments/9999/curves?name=loss", "/experiments/9999/metric-names"):
        r = master.http.get(path)
        assert r.status_code == 404, path
        assert "experiment 9999 does not exist" in r.json()["error"]["message"]


def test_the_new_routes_have_stable_operation_ids(master):
    schema = master.http.get(f"{master.url}/openapi.json").json()
    ids = {op["operationId"] for path in schema["paths"].values() for op in path.values()}
    assert {"get_experiment_curves", "list_experiment_metric_names"} <= ids
