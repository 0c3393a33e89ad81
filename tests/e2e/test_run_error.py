"""A run's own error (the exception leaving its `with shipyard.core.init()` block) in the
run's exit reason, and the contract of POST /trials/{id}/run-error."""

from __future__ import annotations

from pathlib import Path

import pytest

CODE = Path(__file__).parent / "trial_code"
NO_RESTARTS = "no restarts left (max_restarts: 0)"


@pytest.fixture(scope="module")
def master(shared_master):
    return shared_master


def test_the_error_that_ended_a_run_is_in_its_exit_reason(master):
    config = """
name: run-errors
entrypoint: python3 raises.py
hyperparameters:
  fail: {type: categorical, vals: [value_error, long, exit_message, exit_code]}
searcher: {name: grid, metric: val_loss, max_concurrent_trials: 4}
max_restarts: 0
"""
    done = master.wait(master.create(config, CODE)["id"])
    trials = {t["hparams"]["fail"]: master.trial(t["id"]) for t in done["trials"]}

    assert {t["state"] for t in trials.values()} == {"ERRORED"}
    assert trials["value_error"]["exit_reason"] == (
        f"exited with code 1: ValueError: learning rate 0.5 is too high; {NO_RESTARTS}"
    )
    assert trials["value_error"]["runs"][0]["ended_how"] == trials["value_error"]["exit_reason"]
    assert trials["exit_message"]["exit_reason"] == (
        f"exited with code 1: SystemExit: no training data in /data; {NO_RESTARTS}"
    )
    # A bare exit code says nothing more than the code: no message was sent.
    assert trials["exit_code"]["exit_reason"] == f"exited with code 4; {NO_RESTARTS}"
    long_reason = trials["long"]["exit_reason"]
    assert long_reason.startswith("exited with code 1: ValueError: xxxxx")
    assert long_reason.endswith(f"x…; {NO_RESTARTS}")
    assert len(long_reason) < 1100


def test_run_error_is_taken_from_the_current_run_only(master):
    config = """
name: run-error-api
entrypoint: python3 steps.py
hyperparameters: {steps: 100000, sleep: 0.05}
searcher: {name: single, metric: val_loss}
"""
    exp = master.create(config, CODE)
    trial_id = exp["trials"][0]["id"]
    master.wait_for(lambda: master.trial(trial_id)["state"] == "RUNNING", what="launch")
    url = f"/trials/{trial_id}/run-error"
    run_1, run_7 = master.task_http(trial_id, run_id=1), master.task_http(trial_id, run_id=7)

    for bad in (None, 42, ["a"], "  "):
        r = run_1.post(url, json={"run_id": 1, "message": bad})
        assert r.status_code == 400, bad
        assert r.json()["error"]["message"].startswith("message must be a non-empty string, got")
    r = run_7.post(url, json={"run_id": 7, "message": "ValueError: late"})
    assert r.status_code == 409 and "run 1, not run 7" in r.json()["error"]["message"]
    assert run_1.post(url, json={"run_id": 1, "message": "ValueError: x"}).status_code == 200

    master.http.post(f"/experiments/{exp['id']}/kill")
    master.wait_for(lambda: master.trial(trial_id)["state"] == "CANCELED", what="canceled")
    assert ": ValueError: x; " in master.trial(trial_id)["runs"][0]["ended_how"]  # stored
    r = run_1.post(url, json={"run_id": 1, "message": "ValueError: after the end"})
    assert r.status_code == 409 and "has ended" in r.json()["error"]["message"]
