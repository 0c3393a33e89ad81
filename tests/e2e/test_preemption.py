"""Resource pools and preemption through a real master: a better-priority experiment takes
slots from running trials of worse priority; they checkpoint, requeue and resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.master import Master

CODE = Path(__file__).parent / "trial_code"

POOLS = """
resource_pools:
  - pool_name: default
    slots: 2
    scheduler: {type: priority, preemption: true}
  - pool_name: quiet
    slots: 1
"""


def steps_experiment(
    name: str, priority: int, extra_hparams: str = "", slots: int = 1, **fields
) -> str:
    lines = [
        f"name: {name}",
        "entrypoint: python3 steps.py",
        "hyperparameters:",
        "  steps: 60",
        "  ckpt_every: 5",
        "  sleep: 0.05",
        extra_hparams,
        "searcher: {name: single, metric: val_loss}",
        f"resources: {{priority: {priority}, slots_per_trial: {slots}}}",
        "max_restarts: 0",
        *(f"{key}: {value}" for key, value in fields.items()),
    ]
    return "\n".join(line for line in lines if line) + "\n"


@pytest.fixture
def pooled(tmp_path):
    master = Master(tmp_path / "home", slots=3, config=POOLS).start()
    yield master
    master.stop()


def trial_of(master: Master, exp_id: int) -> dict:
    return master.trial(master.experiment(exp_id)["trials"][0]["id"])


def test_a_better_priority_experiment_preempts_and_the_victim_resumes(pooled):
    low = pooled.create(steps_experiment("low", 60), CODE)
    pooled.wait_for(
        lambda: trial_of(pooled, low["id"])["steps_completed"] >= 7, what="low to train"
    )
    high = pooled.create(
        steps_experiment("high", 10, slots=2).replace("steps: 60", "steps: 10"), CODE
    )
    assert pooled.wait(high["id"])["state"] == "COMPLETED"
    assert pooled.wait(low["id"])["state"] == "COMPLETED"
    victim = trial_of(pooled, low["id"])
    assert [r["ended_how"] for r in victim["runs"]] == [
        "exited with code 0; preempted: resumes from its checkpoint",
        "exited with code 0; completed",
    ]
    assert victim["restarts"] == 0  # a preemption is not a failure
    logs = pooled.logs(victim["id"])
    stopped_at = int(
        next(line for line in logs if line.startswith("preempted at step")).split()[-1]
    )
    resumed_from = int(
        next(line for line in logs if line.startswith("resumed from step")).split()[-1]
    )
    assert resumed_from <= stopped_at
    # one loss per step, and the steps after the checkpoint from the run that resumed
    losses = pooled.metrics(victim["id"], "training", "loss")
    assert [s for s, _ in losses] == list(range(1, 61))
    runs = dict(pooled.metrics(victim["id"], "training", "run"))
    assert runs[resumed_from + 1] == 2 and runs[1] == 1


def test_a_trial_that_ignores_preemption_is_killed_after_preemption_timeout(pooled):
    low = pooled.create(
        # 200 steps: ten seconds of them left at step 7, so it is still running when the
        # timeout ends (with 60 it sometimes finished first on a quiet machine)
        steps_experiment("stubborn", 60, "  ignore_preempt: true", preemption_timeout=2).replace(
            "steps: 60", "steps: 200"
        ),
        CODE,
    )
    pooled.wait_for(
        lambda: trial_of(pooled, low["id"])["steps_completed"] >= 7, what="low to train"
    )
    high = pooled.create(
        steps_experiment("high", 10, slots=2).replace("steps: 60", "steps: 5"), CODE
    )
    # It holds its slot until the timeout: the job list says what is going on.
    jobs = pooled.wait_for(
        lambda: (
            (j := pooled.http.get("/jobs").json())
            and any("preempted" in x["reason"] for x in j)
            and j
        ),
        what="job list to show the preemption",
    )
    assert [j["reason"] for j in jobs if j["experiment_id"] == low["id"]] == [
        "running on cpu0; preempted, checkpointing to give up its slots"
    ]
    assert pooled.wait(high["id"])["state"] == "COMPLETED"
    assert pooled.wait(low["id"])["state"] == "COMPLETED"
    victim = trial_of(pooled, low["id"])
    first, second = victim["runs"]
    assert first["ended_how"] == "killed by signal 15; preempted: resumes from its checkpoint"
    assert second["ended_how"] == "exited with code 0; completed"
    assert "resumed from step" in "\n".join(pooled.logs(victim["id"]))


def test_pool_list_shows_each_pool_with_its_backend_slots_and_health(pooled):
    shown = pooled.cli("pool", "list", "--json")
    assert shown.returncode == 0, shown.stderr
    pools = {p["name"]: p for p in json.loads(shown.stdout)}
    assert pools["default"] == {
        "name": "default",
        "type": "local",
        "description": "",
        "default": True,
        "slots_total": 2,
        "slots_used": 0,
        "scheduler": "priority",
        "preemption": True,
        "healthy": True,
        "problem": None,
    }
    assert pools["quiet"]["slots_total"] == 1 and not pools["quiet"]["default"]
    exp = pooled.create(steps_experiment("one", 42), CODE)
    pooled.wait_for(lambda: trial_of(pooled, exp["id"])["state"] == "RUNNING", what="running")
    table = pooled.cli("pool", "list")
    assert table.returncode == 0, table.stderr
    (default_row,) = [line for line in table.stdout.splitlines() if "default (default)" in line]
    assert "local" in default_row and "1/2" in default_row and "priority, preemption" in default_row
    assert "ok" in default_row


def test_pools_keep_their_slots_and_unknown_pools_are_refused(pooled):
    bad = steps_experiment("nowhere", 42).replace(
        "slots_per_trial: 1}", "slots_per_trial: 1, resource_pool: gpus}"
    )
    r = pooled.post_experiment(bad, CODE)
    assert r.status_code == 422
    detail = r.json()["error"]["details"][0]
    assert detail["path"] == "resources.resource_pool"
    assert detail["message"] == "unknown resource pool 'gpus'; this master has 'default', 'quiet'"
    too_big = steps_experiment("too big", 42).replace(
        "slots_per_trial: 1}", "slots_per_trial: 2, resource_pool: quiet}"
    )
    r = pooled.post_experiment(too_big, CODE)
    assert r.status_code == 422
    assert r.json()["error"]["details"][0]["message"] == (
        "2 slots per trial, but resource pool 'quiet' has 1"
    )
    # The quiet pool's one slot runs its trials one at a time, apart from the default pool.
    quiet = steps_experiment("quiet", 42).replace(
        "slots_per_trial: 1}", "slots_per_trial: 1, resource_pool: quiet}"
    )
    quiet = quiet.replace("{name: single, metric: val_loss}", "{name: grid, metric: val_loss}")
    quiet = quiet.replace("  steps: 60", "  steps: 6\n  x: {type: categorical, vals: [1, 2]}")
    done = pooled.wait(pooled.create(quiet, CODE)["id"])
    assert done["state"] == "COMPLETED"
    runs = [run for t in done["trials"] for run in pooled.trial(t["id"])["runs"]]
    assert [run["slots"] for run in runs] == [["cpu2"], ["cpu2"]]
    first, second = sorted(runs, key=lambda run: run["started_at"])
    assert first["ended_at"] <= second["started_at"]
