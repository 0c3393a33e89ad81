"""What the trial and cluster pages read, from a real master whose trials really ran: a
trial's own checkpoints, trials by state across experiments (recent failures), and an
experiment's summary without its trials. Through the API, the SDK and the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shipyard.client import Shipyard
from tests.e2e.master import Master

CODE = Path(__file__).parents[1] / "e2e" / "trial_code"


def checkpointing(store: Path) -> str:
    """Two trials of steps.py, each checkpointing at steps 2, 4 and 6, every one kept."""
    return f"""
name: checkpointing
entrypoint: python3 steps.py
hyperparameters:
  steps: 6
  ckpt_every: 2
  x: {{type: categorical, vals: [0.5, 1.0]}}
searcher: {{name: grid, metric: val_loss}}
max_restarts: 0
checkpoint_storage: {{type: shared_fs, host_path: {store}, save_trial_latest: 10}}
"""


# Two trials that fail (raises.py), one after the other so they end at different times.
FAILING = """
name: failing
entrypoint: python3 raises.py
hyperparameters:
  fail: {type: categorical, vals: [exit_code, exit_message]}
searcher: {name: grid, metric: val_loss, max_concurrent_trials: 1}
max_restarts: 0
"""

# One trial that crashes at step 2 of its first run, restarts and completes.
RESTARTING = """
name: restarting
entrypoint: python3 steps.py
hyperparameters: {steps: 4, ckpt_every: 2, crash_at: 2, crash_runs: 1}
searcher: {name: single, metric: val_loss}
max_restarts: 1
"""


@pytest.fixture(scope="module")
def master(tmp_path_factory):
    m = Master(tmp_path_factory.mktemp("trial-apis") / "home", slots=2).start()
    yield m
    m.stop()


@pytest.fixture(scope="module")
def runs(master) -> dict[str, dict]:
    """name -> the ended experiment (detail)."""
    configs = {
        "checkpointing": checkpointing(master.home / "store"),
        "failing": FAILING,
        "restarting": RESTARTING,
    }
    created = {name: master.create(config, CODE)["id"] for name, config in configs.items()}
    done = {name: master.wait(exp_id, timeout=120) for name, exp_id in created.items()}
    assert done["checkpointing"]["state"] == "COMPLETED", done["checkpointing"]
    assert done["failing"]["state"] == "ERRORED", done["failing"]
    assert done["restarting"]["state"] == "COMPLETED", done["restarting"]
    assert done["restarting"]["trials"][0]["restarts"] == 1
    return done


def trial_ids(exp: dict) -> set[int]:
    return {t["id"] for t in exp["trials"]}


def listed(master, **params) -> list[dict]:
    r = master.http.get("/trials", params=params)
    assert r.status_code == 200, r.text
    return r.json()


# -- a trial's checkpoints ------------------------------------------------------------


def test_a_trials_checkpoints_are_exactly_its_own_in_step_order(master, runs):
    exp = runs["checkpointing"]
    everything = master.http.get(f"/experiments/{exp['id']}/checkpoints").json()
    assert len(everything) == 6
    for trial in exp["trials"]:
        r = master.http.get(f"/trials/{trial['id']}/checkpoints")
        assert r.status_code == 200, r.text
        own = r.json()
        assert [c["steps_completed"] for c in own] == [2, 4, 6]
        # the same items the experiment's list has for this trial, field for field
        assert own == [c for c in everything if c["trial_id"] == trial["id"]]
        assert own[-1]["uuid"] == master.trial(trial["id"])["latest_checkpoint"]


def test_a_trial_that_saved_no_checkpoint_has_an_empty_list(master, runs):
    trial_id = runs["failing"]["trials"][0]["id"]
    r = master.http.get(f"/trials/{trial_id}/checkpoints")
    assert r.status_code == 200 and r.json() == []


def test_the_checkpoints_of_an_unknown_trial_are_404(master):
    r = master.http.get("/trials/99999/checkpoints")
    assert r.status_code == 404
    assert r.json()["error"]["message"] == "trial 99999 does not exist"


# -- trials across experiments ----------------------------------------------------------


def test_errored_trials_of_every_experiment_latest_end_first(master, runs):
    errored = listed(master, state="ERRORED")
    failing = runs["failing"]
    assert {t["id"] for t in errored} == trial_ids(failing)
    ends = [t["ended_at"] for t in errored]
    assert ends == sorted(ends, reverse=True) and len(set(ends)) == 2
    for item in errored:
        assert item["state"] == "ERRORED"
        assert item["experiment_id"] == failing["id"]
        assert item["experiment_name"] == "failing"
        assert item["exit_reason"], item  # what the master recorded
        assert item["end_reason"].startswith("errored"), item
    by_id = {t["id"]: t for t in errored}
    for trial in failing["trials"]:
        assert by_id[trial["id"]]["end_reason"] == trial["end_reason"]  # as the experiment says

    completed = trial_ids(runs["checkpointing"]) | trial_ids(runs["restarting"])
    assert not completed & set(by_id)
    assert {t["id"] for t in listed(master, state="COMPLETED")} == completed


def test_several_states_restarts_and_a_limit(master, runs):
    both = listed(master, state=["ERRORED", "COMPLETED"])
    assert {t["id"] for t in both} == trial_ids(runs["failing"]) | trial_ids(
        runs["checkpointing"]
    ) | trial_ids(runs["restarting"])
    newest = max(both, key=lambda t: t["ended_at"])
    assert listed(master, state=["ERRORED", "COMPLETED"], limit=1) == [newest]

    restarted = listed(master, restarted="true")
    assert [t["id"] for t in restarted] == [runs["restarting"]["trials"][0]["id"]]
    assert restarted[0]["restarts"] == 1 and restarted[0]["state"] == "COMPLETED"
    never = {t["id"] for t in listed(master, restarted="false")}
    assert restarted[0]["id"] not in never and trial_ids(runs["failing"]) <= never


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"state": "BROKEN"}, "state"),
        ({"state": ["ERRORED", "errored!"]}, "state"),
        ({"limit": 0}, "limit"),
        ({"limit": 1001}, "limit"),
        ({"limit": "many"}, "limit"),
        ({"restarted": "perhaps"}, "restarted"),
    ],
)
def test_a_bad_filter_is_400_naming_it(master, params, field):
    r = master.http.get("/trials", params=params)
    assert r.status_code == 400, r.text
    assert {d["path"].split(".")[1] for d in r.json()["error"]["details"]} == {field}


# -- an experiment's summary -------------------------------------------------------------


def test_an_experiments_summary_is_its_list_entry_and_config_without_trials(master, runs):
    exp = runs["checkpointing"]
    r = master.http.get(f"/experiments/{exp['id']}/summary")
    assert r.status_code == 200, r.text
    summary = r.json()
    assert "trials" not in summary
    [entry] = [e for e in master.http.get("/experiments").json() if e["id"] == exp["id"]]
    assert summary == {**entry, "config": exp["config"]}
    assert summary["trial_states"] == {"COMPLETED": 2} and summary["metric"] == "val_loss"


def test_the_summary_of_an_unknown_experiment_is_404(master):
    r = master.http.get("/experiments/99999/summary")
    assert r.status_code == 404
    assert r.json()["error"]["message"] == "experiment 99999 does not exist"


# -- SDK, command line, schema ----------------------------------------------------------


def test_the_sdk_reads_the_same(master, runs):
    trial_id = runs["checkpointing"]["trials"][0]["id"]
    with Shipyard(master.url) as sy:
        assert [c.steps_completed for c in sy.trial_checkpoints(trial_id)] == [2, 4, 6]
        assert {t.id for t in sy.list_trials(states=["ERRORED"])} == trial_ids(runs["failing"])
        summary = sy.experiment_summary(runs["failing"]["id"])
        assert summary.state == "ERRORED" and summary.config["name"] == "failing"


def test_the_command_line_lists_a_trials_checkpoints_and_recent_failures(master, runs):
    trial_id = runs["checkpointing"]["trials"][1]["id"]
    shown = master.cli("trial", "checkpoints", trial_id, "--json")
    assert shown.returncode == 0, shown.stderr
    expected = master.http.get(f"/trials/{trial_id}/checkpoints").json()
    assert [c["uuid"] for c in json.loads(shown.stdout)] == [c["uuid"] for c in expected]

    table = master.cli("trial", "list", "--state", "errored")
    assert table.returncode == 0, table.stderr
    rows = [line for line in table.stdout.splitlines() if "failing (" in line]
    assert len(rows) == 2 and all("ERRORED" in row for row in rows), table.stdout

    missing = master.cli("trial", "checkpoints", 99999)
    assert missing.returncode == 1 and "trial 99999 does not exist" in missing.stderr


def test_the_new_routes_have_stable_operation_ids(master):
    schema = master.http.get(f"{master.url}/openapi.json").json()
    ids = {op["operationId"] for path in schema["paths"].values() for op in path.values()}
    assert {"list_trial_checkpoints", "list_trials", "get_experiment_summary"} <= ids
