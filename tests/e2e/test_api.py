"""The REST API's contract: bad input gets a 4xx that says what was wrong, never a 500."""

from __future__ import annotations

import io
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests.e2e.master import Master

CODE = Path(__file__).parent / "trial_code"
GOOD = """
name: api
entrypoint: python3 steps.py
hyperparameters: {steps: 3}
searcher: {name: single, metric: val_loss}
"""


@pytest.fixture(scope="module")
def master(tmp_path_factory):
    """One master for these tests: each works on experiments of its own."""
    m = Master(tmp_path_factory.mktemp("api") / "home").start()
    yield m
    m.stop()


def test_openapi_has_stable_operation_ids(master):
    schema = master.http.get(f"{master.url}/openapi.json").json()
    ids = {op["operationId"] for path in schema["paths"].values() for op in path.values()}
    for expected in (
        "get_master",
        "list_slots",
        "upload_context",
        "create_experiment",
        "list_experiments",
        "get_experiment",
        "pause_experiment",
        "activate_experiment",
        "kill_experiment",
        "get_trial",
        "get_trial_logs",
        "get_trial_metrics",
        "report_trial_metrics",
        "report_checkpoint",
        "get_trial_signals",
        "get_checkpoint",
        "download_checkpoint",
    ):
        assert expected in ids


def test_unknown_ids_are_404_with_a_message(master):
    for path in ("/experiments/999", "/trials/999", "/checkpoints/nope", "/trials/999/logs"):
        r = master.http.get(path)
        assert r.status_code == 404, path
        assert "does not exist" in r.json()["error"]["message"]
    r = master.http.post("/experiments/999/kill")
    assert r.status_code == 404


def test_invalid_config_is_422_with_the_field_path(master):
    bad = GOOD.replace("metric: val_loss", "metric: val_loss, max_trails: 3")
    r = master.http.post("/experiments", json={"config_yaml": bad})
    assert r.status_code == 422
    detail = r.json()["error"]["details"][0]
    assert detail["path"] == "searcher.max_trails"
    count = len(master.http.get("/experiments").json())
    assert master.http.post("/experiments", json={"config_yaml": bad}).status_code == 422
    assert len(master.http.get("/experiments").json()) == count  # nothing stored


def test_a_control_character_in_the_config_is_422_with_its_line(master):
    # YAML refuses it before parsing (a 500 once: found by test_api_schema.py).
    for route in ("/experiments", "/preview-search"):
        r = master.http.post(route, json={"config_yaml": GOOD + "description: a\x02b\n"})
        assert r.status_code == 422, r.text
        assert r.json()["error"]["details"][0]["line"] == 6


@pytest.mark.parametrize("owner", ["", "x" * 129, 7])
def test_a_bad_owner_is_400_naming_it_and_stores_nothing(master, owner):
    count = len(master.http.get("/experiments").json())
    r = master.http.post("/experiments", json={"config_yaml": GOOD, "owner": owner})
    assert r.status_code == 400, r.text
    assert r.json()["error"]["details"][0]["path"] == "body.owner"
    assert len(master.http.get("/experiments").json()) == count


def test_missing_entrypoint_file_is_refused(master):
    ctx = master.http.post("/contexts", content=_tar({"other.py": b"print(1)"})).json()
    r = master.http.post("/experiments", json={"config_yaml": GOOD, "context_id": ctx["id"]})
    assert r.status_code == 422
    assert "steps.py" in r.text


def test_too_many_slots_is_refused(master):
    bad = GOOD + "resources: {slots_per_trial: 64}\n"
    r = master.post_experiment(bad, CODE)
    assert r.status_code == 422
    assert r.json()["error"]["details"][0]["path"] == "resources.slots_per_trial"


def test_context_that_is_not_an_archive_is_400(master):
    r = master.http.post("/contexts", content=b"not a tar")
    assert r.status_code == 400
    assert "gzip" in r.json()["error"]["message"]


def test_state_conflicts_are_409(master):
    exp = master.create(GOOD, CODE)
    master.wait(exp["id"])
    r = master.http.post(f"/experiments/{exp['id']}/pause")
    assert r.status_code == 409
    assert "COMPLETED" in r.json()["error"]["message"]


def _running_trial(master) -> tuple[int, int]:
    exp = master.create(GOOD.replace("steps: 3", "steps: 100000, sleep: 0.05"), CODE)
    trial_id = exp["trials"][0]["id"]
    master.wait_for(lambda: master.trial(trial_id)["state"] == "RUNNING", what="launch")
    return exp["id"], trial_id


def test_metrics_resent_for_a_step_keep_one_value(master):
    exp_id, trial_id = _running_trial(master)
    body = {
        "run_id": 1,
        "reports": [
            {"group": "validation", "steps_completed": 1, "metrics": {"acc": 0.5}},
            {"group": "validation", "steps_completed": 2, "metrics": {"acc": 0.7}},
        ],
    }
    trial_side = master.task_http(trial_id, run_id=1)  # what the trial's reports carry
    assert trial_side.post(f"/trials/{trial_id}/metrics", json=body).status_code == 200
    body["reports"][0]["metrics"]["acc"] = 0.6  # a rerun's value for step 1 replaces the first
    assert trial_side.post(f"/trials/{trial_id}/metrics", json=body).status_code == 200
    assert master.metrics(trial_id, "validation", "acc") == [(1, 0.6), (2, 0.7)]
    summary = next(m for m in master.trial(trial_id)["metrics"] if m["name"] == "acc")
    assert (summary["count"], summary["min"], summary["max"]) == (2, 0.6, 0.7)
    master.http.post(f"/experiments/{exp_id}/kill")


def test_reports_of_another_run_are_refused(master):
    exp_id, trial_id = _running_trial(master)
    body = {"run_id": 7, "reports": [{"group": "training", "steps_completed": 1, "metrics": {}}]}
    r = master.task_http(trial_id, run_id=7).post(f"/trials/{trial_id}/metrics", json=body)
    assert r.status_code == 409 and "run 1, not run 7" in r.json()["error"]["message"]
    master.http.post(f"/experiments/{exp_id}/kill")


def test_numbers_out_of_range_are_400(master):
    assert master.http.get(f"/trials/{2**70}").status_code == 400
    exp_id, trial_id = _running_trial(master)
    huge = {"group": "training", "steps_completed": 2**64, "metrics": {"a": 1}}
    r = master.task_http(trial_id, run_id=1).post(
        f"/trials/{trial_id}/metrics", json={"run_id": 1, "reports": [huge]}
    )
    assert r.status_code == 400 and "steps_completed" in r.json()["error"]["message"]
    master.http.post(f"/experiments/{exp_id}/kill")


def test_bad_metric_body_is_400(master):
    exp_id, trial_id = _running_trial(master)
    trial_side = master.task_http(trial_id, run_id=1)
    r = trial_side.post(
        f"/trials/{trial_id}/metrics",
        json={
            "run_id": 1,
            "reports": [{"group": "training", "steps_completed": -1, "metrics": {}}],
        },
    )
    assert r.status_code == 400
    assert "steps_completed" in r.json()["error"]["message"]
    r = trial_side.post(
        f"/trials/{trial_id}/metrics",
        json={
            "run_id": 1,
            "reports": [{"group": "training", "steps_completed": 1, "metrics": {"a": "x"}}],
        },
    )
    assert r.status_code == 400 and "'a'" in r.json()["error"]["message"]
    master.http.post(f"/experiments/{exp_id}/kill")


def test_a_bad_metric_group_is_400_naming_it_and_stores_nothing_of_its_batch(master):
    exp_id, trial_id = _running_trial(master)
    trial_side, url = master.task_http(trial_id, run_id=1), f"/trials/{trial_id}/metrics"
    first = {"group": "eval.extra", "steps_completed": 1, "metrics": {"f1": 0.5}}
    assert trial_side.post(url, json={"run_id": 1, "reports": [first]}).status_code == 200
    for bad in ("", "has space", "x" * 40, "1st", "a/b", None, 3):
        batch = [
            {"group": "eval.extra", "steps_completed": 2, "metrics": {"f1": 0.9}},
            {"group": bad, "steps_completed": 2, "metrics": {"f1": 0.1}},
        ]
        r = trial_side.post(url, json={"run_id": 1, "reports": batch})
        assert r.status_code == 400, r.text
        message = r.json()["error"]["message"]
        assert repr(bad) in message, message
        if isinstance(bad, str):
            assert "^[A-Za-z][A-Za-z0-9_.-]{0,31}$" in message
    # The good report of each refused batch was not stored; the one before is still there.
    assert master.metrics(trial_id, "eval.extra", "f1") == [(1, 0.5)]
    summary = next(m for m in master.trial(trial_id)["metrics"] if m["group"] == "eval.extra")
    assert (summary["name"], summary["count"], summary["last"]) == ("f1", 1, 0.5)
    master.http.post(f"/experiments/{exp_id}/kill")


def test_metrics_sent_as_columns_are_stored_as_reports_are_and_checked_alike(master):
    exp_id, trial_id = _running_trial(master)  # it reports loss: these are other names
    trial_side, url = master.task_http(trial_id, run_id=1), f"/trials/{trial_id}/metrics"
    columns = [
        {"group": "training", "steps": [1, 2, 3], "metrics": {"col_loss": [0.9, 0.5, 0.4]}},
        {"group": "validation", "steps": [3], "metrics": {"col_acc": [0.6]}},
        {"group": "training", "steps": [3], "metrics": {"col_loss": [0.3]}},  # step 3 resent
    ]
    r = trial_side.post(url, json={"run_id": 1, "columns": columns})
    assert r.status_code == 200 and r.json() == {"stored": 5}
    assert master.metrics(trial_id, "training", "col_loss") == [(1, 0.9), (2, 0.5), (3, 0.3)]
    assert master.metrics(trial_id, "validation", "col_acc") == [(3, 0.6)]
    summary = next(m for m in master.trial(trial_id)["metrics"] if m["name"] == "col_loss")
    assert (summary["count"], summary["min"], summary["last"]) == (3, 0.3, 0.3)
    bad_blocks = {
        "one value short": {"steps": [4, 5], "metrics": {"col_loss": [0.1]}},
        "a step that is not an integer": {"steps": [4, 5.5], "metrics": {"col_loss": [0.1, 0.2]}},
        "a negative step": {"steps": [-1], "metrics": {"col_loss": [0.1]}},
        "a value that is not a number": {"steps": [4], "metrics": {"col_loss": ["x"]}},
    }
    for why, block in bad_blocks.items():
        good = {"group": "training", "steps": [4], "metrics": {"col_loss": [0.2]}}
        body = {"run_id": 1, "columns": [good, {"group": "training", **block}]}
        r = trial_side.post(url, json=body)
        assert r.status_code == 400, (why, r.text)
        assert ("steps" in r.json()["error"]["message"]) or (
            "'col_loss'" in r.json()["error"]["message"]
        )
    # Nothing of a refused batch was stored, not even its good block.
    assert master.metrics(trial_id, "training", "col_loss") == [(1, 0.9), (2, 0.5), (3, 0.3)]
    master.http.post(f"/experiments/{exp_id}/kill")


def test_port_in_use_is_a_clear_error(master):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "shipyard.server",
            "--port",
            str(master.port),
            "--home",
            str(master.home),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode != 0
    assert f"port {master.port}" in proc.stderr and "already in use" in proc.stderr


def test_checkpoint_download_streams_the_files(master, tmp_path):
    exp = master.create(GOOD.replace("steps: 3", "steps: 5"), CODE)
    master.wait(exp["id"])
    ckpts = master.http.get(f"/experiments/{exp['id']}/checkpoints").json()
    assert [c["steps_completed"] for c in ckpts] == [5]
    r = master.http.get(f"/checkpoints/{ckpts[0]['uuid']}/download")
    with tarfile.open(fileobj=io.BytesIO(r.content)) as tar:
        names = tar.getnames()
    assert "state.json" in names and "metadata.json" in names


def _tar(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()
