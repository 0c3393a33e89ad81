"""A real master over HTTP running real trial processes through their whole lifecycle."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.e2e.master import Master
from tests.fixtures import procs

CODE = Path(__file__).parent / "trial_code"


@pytest.fixture(scope="module")
def master(shared_master):
    return shared_master


def config(hparams: str, searcher: str = "name: single", extra: str = "") -> str:
    return f"""
name: lifecycle
entrypoint: python3 steps.py
hyperparameters:
{hparams}
searcher:
  metric: val_loss
  {searcher}
max_restarts: 2
{extra}
"""


def test_random_search_runs_every_trial_and_records_metrics(master):
    exp = master.create(
        config(
            "  x: {type: double, minval: -1, maxval: 1}\n  steps: 10",
            "name: random\n  max_trials: 4\n  max_concurrent_trials: 2",
        ),
        CODE,
    )
    done = master.wait(exp["id"])
    assert done["state"] == "COMPLETED"
    assert done["num_trials"] == 4
    assert all(t["state"] == "COMPLETED" for t in done["trials"])
    assert len({t["hparams"]["x"] for t in done["trials"]}) == 4
    trial = done["trials"][0]
    losses = master.metrics(trial["id"], "training", "loss")
    assert [s for s, _ in losses] == list(range(1, 11))
    assert losses[-1][1] == pytest.approx(0.1)
    vals = master.metrics(trial["id"], "validation", "val_loss")
    assert [s for s, _ in vals] == [5, 10]
    best = min(t["best_validation"] for t in done["trials"])
    assert done["best_validation"] == pytest.approx(best)
    assert trial["steps_completed"] == 10
    assert "finished" in master.logs(trial["id"])


def test_crashed_trial_resumes_from_its_latest_checkpoint(master):
    exp = master.create(config("  steps: 12\n  crash_at: 7\n  crash_runs: 1"), CODE)
    done = master.wait(exp["id"])
    trial = master.trial(done["trials"][0]["id"])
    assert done["state"] == "COMPLETED"
    assert trial["restarts"] == 1 and trial["run_id"] == 2
    logs = master.logs(trial["id"])
    assert "boom at step 7 in run 1" in logs
    assert "resumed from step 5" in logs
    losses = master.metrics(trial["id"], "training", "loss")
    # steps 6 and 7 were reported twice (once per run): one value each, from the latest run
    assert [s for s, _ in losses] == list(range(1, 13))
    runs = dict(master.metrics(trial["id"], "training", "run"))
    assert runs[6] == 2 and runs[7] == 2 and runs[5] == 1
    # trial describe lists each run with how it ended
    assert [(r["run_id"], r["ended_how"]) for r in trial["runs"]] == [
        (1, "exited with code 3; restart 1 of 2"),  # max_restarts: 2
        (2, "exited with code 0; completed"),
    ]
    assert all(r["slots"] and r["ended_at"] for r in trial["runs"])


def test_trial_that_keeps_crashing_errors_with_its_last_log_lines(master):
    exp = master.create(config("  steps: 12\n  crash_at: 2\n  crash_runs: 99"), CODE)
    done = master.wait(exp["id"])
    assert done["state"] == "ERRORED"
    trial = master.trial(done["trials"][0]["id"])
    assert trial["state"] == "ERRORED"
    assert trial["restarts"] == 2
    assert "exited with code 3" in trial["exit_reason"]
    assert "boom at step 2 in run 3" in trial["last_log_lines"]


def test_trial_that_never_reports_still_completes(master):
    exp = master.create(config("  silent: true"), CODE)
    done = master.wait(exp["id"])
    trial = master.trial(done["trials"][0]["id"])
    assert trial["state"] == "COMPLETED"
    assert trial["metrics"] == [] and trial["best_validation"] is None
    assert "exiting without a metric" in master.logs(trial["id"])


def test_kill_terminates_the_trial_process_group(master):
    exp = master.create(config("  steps: 100000\n  sleep: 0.05"), CODE)
    trial_id = master.wait_for(
        lambda: [t for t in master.experiment(exp["id"])["trials"] if t["state"] == "RUNNING"],
        what="a running trial",
    )[0]["id"]
    master.wait_for(lambda: master.trial(trial_id)["steps_completed"] > 2, what="progress")
    assert master.http.post(f"/experiments/{exp['id']}/kill").json()["state"] == "CANCELED"
    master.wait_for(lambda: master.trial(trial_id)["state"] == "CANCELED", what="trial canceled")
    workdir = str(master.home / "trials" / str(trial_id))
    master.wait_for(
        lambda: not procs.in_directory(workdir), timeout=15, what="trial processes gone"
    )


def test_pause_checkpoints_and_activate_resumes(master):
    exp = master.create(config("  steps: 400\n  sleep: 0.02\n  ckpt_every: 1000"), CODE)
    exp_id = exp["id"]
    trial_id = exp["trials"][0]["id"]
    master.wait_for(lambda: master.trial(trial_id)["steps_completed"] > 3, what="progress")
    assert master.http.post(f"/experiments/{exp_id}/pause").json()["state"] == "PAUSED"
    master.wait_for(lambda: master.trial(trial_id)["state"] == "PAUSED", what="trial paused")
    assert any(line.startswith("preempted at step") for line in master.logs(trial_id))
    paused_at = master.trial(trial_id)["steps_completed"]
    # Once its process is gone and the master has given its slot back, no step can come.
    workdir = str(master.home / "trials" / str(trial_id))
    master.wait_for(
        lambda: (
            not procs.in_directory(workdir)
            and all(s["trial_id"] != trial_id for s in master.http.get("/slots").json())
        ),
        what="the paused trial's process gone and its slot free",
    )
    assert master.trial(trial_id)["steps_completed"] == paused_at
    assert master.http.post(f"/experiments/{exp_id}/activate").json()["state"] == "ACTIVE"
    master.wait_for(lambda: master.trial(trial_id)["run_id"] == 2, what="second run")
    master.http.post(f"/experiments/{exp_id}/kill")


def test_master_killed_with_sigkill_reattaches_running_trials(own_master):
    master = own_master  # killed and started again: not the module's
    exp = master.create(config("  steps: 60\n  sleep: 0.05\n  ckpt_every: 10"), CODE)
    trial_id = exp["trials"][0]["id"]
    master.wait_for(lambda: master.trial(trial_id)["steps_completed"] >= 5, what="progress")
    master.kill9()
    time.sleep(1.0)  # the trial keeps training, and retries its reports, while no master runs
    master.start()
    done = master.wait(exp["id"], timeout=60)
    assert done["state"] == "COMPLETED"
    trial = master.trial(trial_id)
    assert trial["run_id"] == 1 and trial["restarts"] == 0  # re-attached, not restarted
    steps = [s for s, _ in master.metrics(trial_id, "training", "loss")]
    assert steps == list(range(1, 61))  # nothing lost across the master's death


def test_trial_that_died_while_the_master_was_down_resumes_from_its_checkpoint(own_master):
    master = own_master  # killed and started again: not the module's
    exp = master.create(config("  steps: 40\n  sleep: 0.05\n  ckpt_every: 5"), CODE)
    trial_id = exp["trials"][0]["id"]
    master.wait_for(lambda: master.trial(trial_id)["steps_completed"] >= 12, what="progress")
    master.kill9()
    workdir = str(master.home / "trials" / str(trial_id))
    procs.kill(procs.in_directory(workdir))  # the whole trial dies with no exit code recorded
    master.start()
    done = master.wait(exp["id"], timeout=60)
    assert done["state"] == "COMPLETED"
    trial = master.trial(trial_id)
    assert trial["run_id"] == 2
    logs = master.logs(trial_id)
    assert any(line.startswith("resumed from step ") for line in logs)
    steps = [s for s, _ in master.metrics(trial_id, "training", "loss")]
    assert steps == list(range(1, 41))


def test_kill_of_a_trial_that_ignores_sigterm_frees_its_slot(tmp_path, monkeypatch):
    monkeypatch.setenv("SHIPYARD_KILL_GRACE_S", "1")
    master = Master(tmp_path / "home", slots=1).start()
    try:
        exp = master.create(config("  steps: 100000\n  sleep: 0.05\n  ignore_sigterm: true"), CODE)
        trial_id = exp["trials"][0]["id"]
        master.wait_for(lambda: master.trial(trial_id)["steps_completed"] > 2, what="progress")
        master.http.post(f"/experiments/{exp['id']}/kill")
        master.wait_for(lambda: master.trial(trial_id)["state"] == "CANCELED", what="canceled")
        workdir = str(master.home / "trials" / str(trial_id))
        assert not procs.in_directory(workdir)  # SIGKILLed after the grace period
        assert master.http.get("/slots").json()[0]["trial_id"] is None
    finally:
        master.stop()
