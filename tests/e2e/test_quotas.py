"""Workspace quotas on a real master: a trial over its workspace's quota waits, and
`shipyard job list` says why; a quota below what the workspace uses is refused and changes
nothing; raising it lets the trial start."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.e2e.master import CODE, SHIPYARD, Master

LONG = """
name: quota-{n}
workspace: quota-team
entrypoint: python3 steps.py
hyperparameters: {{steps: 100000, sleep: 0.05}}
searcher: {{name: single, metric: val_loss}}
max_restarts: 0
"""


@pytest.fixture(scope="module")
def master(tmp_path_factory):
    m = Master(tmp_path_factory.mktemp("quotas") / "home", slots=2).start()
    yield m
    m.stop()


def test_a_trial_over_its_workspaces_quota_waits_and_says_why(master: Master):
    assert master.http.post("/workspaces", json={"name": "quota-team"}).status_code == 201
    set_quota = master.http.patch("/workspaces/quota-team/quotas", json={"max_trials": 1})
    assert set_quota.status_code == 200, set_quota.text
    first, second = (master.create(LONG.format(n=n), CODE) for n in (1, 2))
    first_trial, second_trial = first["trials"][0]["id"], second["trials"][0]["id"]
    master.wait_for(lambda: master.trial(first_trial)["state"] == "RUNNING", what="launch")
    reason = "its workspace 'quota-team' is at its quota: 1 of 1 trials running"
    jobs = {j["trial_id"]: j for j in master.http.get("/jobs").json()}
    assert jobs[second_trial]["state"] == "QUEUED" and jobs[second_trial]["reason"] == reason
    listed = subprocess.run(
        [str(SHIPYARD), "--master", master.url, "job", "list"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "250"},
    )
    assert listed.returncode == 0, listed.stderr
    assert "at its quota: 1 of 1 trials running" in listed.stdout
    assert master.trial(second_trial)["state"] == "QUEUED"  # one free slot, and it waits

    # Below what it uses now: refused, with the field and the use, and nothing changes.
    below = master.http.patch("/workspaces/quota-team/quotas", json={"max_trials": 0})
    assert below.status_code == 400, below.text
    assert below.json()["error"]["details"] == [
        {"path": "max_trials", "message": "1 trials run in 'quota-team'"}
    ]
    described = master.http.get("/workspaces/quota-team").json()
    assert described["max_trials"] == 1 and described["trials_running"] == 1

    raised = master.http.patch("/workspaces/quota-team/quotas", json={"max_trials": None})
    assert raised.status_code == 200 and raised.json()["max_trials"] is None
    master.wait_for(lambda: master.trial(second_trial)["state"] == "RUNNING", what="2nd launch")
    audit = [e for e in master.http.get("/audit").json() if e["action"] == "workspace.quotas"]
    assert len(audit) == 2  # the refused change left no event
    for exp in (first, second):
        master.http.post(f"/experiments/{exp['id']}/kill")
