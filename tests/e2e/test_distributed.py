"""A multi-slot trial through the torch launcher, on a real master: the gang runs, its logs are
stored by rank, and a crashing rank restarts the trial."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.master import Master
from tests.fixtures import procs

CODE = Path(__file__).parent / "trial_code"
SHIPYARD = Path(sys.executable).parent / "shipyard"


@pytest.fixture(scope="module")
def master(shared_master):
    return shared_master


pytestmark = pytest.mark.torch


def config(hparams: str = "{}", max_restarts: int = 1) -> str:
    return f"""
name: distributed
entrypoint: python3 -m shipyard.launch.torch_distributed python3 all_reduce.py
hyperparameters: {hparams}
resources: {{slots_per_trial: 2}}
searcher: {{name: single, metric: val_loss}}
max_restarts: {max_restarts}
"""


def log_page(master: Master, trial_id: int, **params) -> list[dict]:
    r = master.http.get(f"/trials/{trial_id}/logs", params={"limit": 10_000, **params})
    r.raise_for_status()
    return r.json()["lines"]


def test_two_rank_all_reduce_completes_and_logs_are_kept_by_rank(master):
    exp = master.create(config(), CODE)
    done = master.wait(exp["id"], timeout=120)
    trial = master.trial(done["trials"][0]["id"])
    assert done["state"] == "COMPLETED", trial
    assert sorted(trial["runs"][0]["slots"]) == ["cpu0", "cpu1"]
    # where the run ran, recorded at launch
    assert trial["runs"][0]["environment"] == {"backend": "local", "pool": "default"}
    assert master.metrics(trial["id"], "validation", "val_loss") == [(1, 3.0)]  # 1 + 2

    rank1 = log_page(master, trial["id"], rank=1)
    assert rank1 and {line["rank"] for line in rank1} == {1}
    texts = [line["text"] for line in rank1]
    assert "rank 1 sum 3" in texts
    assert any(t.startswith("rank 1 of 2 on slot cpu") for t in texts)
    assert not any(t.startswith("[") for t in texts)  # the prefix is stripped

    every = log_page(master, trial["id"])
    launcher = [line["text"] for line in every if line["stream"] == "launcher"]
    assert any(t.startswith("starting 2 rank(s) on cpu0,cpu1") for t in launcher)
    assert {(line["rank"], line["stream"]) for line in every} == {
        (0, "launcher"),
        (0, "rank"),
        (1, "rank"),
    }
    rank0 = [line["text"] for line in log_page(master, trial["id"], rank=0)]
    assert "rank 0 sum 3" in rank0 and not any("starting 2 rank(s)" in t for t in rank0)

    # the CLI: every line prefixed by its rank (or [launcher]); --rank R: R's lines as written
    printed = cli(master, "trial", "logs", trial["id"])
    assert "[rank 1] rank 1 sum 3" in printed and "[rank 0] rank 0 sum 3" in printed
    assert any(line.startswith("[launcher] starting 2 rank(s)") for line in printed)
    assert all(line.startswith(("[rank 0] ", "[rank 1] ", "[launcher] ")) for line in printed)
    assert cli(master, "trial", "logs", trial["id"], "--rank", "1") == [
        f"[rank 1] {t}" for t in texts
    ]


def cli(master: Master, *args) -> list[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHIPYARD_")}
    env.update(SHIPYARD_MASTER=master.url, SHIPYARD_HOME=str(master.home / "cli"))
    master.keep_token_in(master.home / "cli")
    result = subprocess.run(
        [str(SHIPYARD), *map(str, args)], capture_output=True, text=True, env=env, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_a_crashing_rank_restarts_the_trial_and_says_which(master):
    exp = master.create(config("{crash_rank: 1, crash_runs: 1}"), CODE)
    done = master.wait(exp["id"], timeout=120)
    trial = master.trial(done["trials"][0]["id"])
    assert done["state"] == "COMPLETED", trial
    assert trial["restarts"] == 1
    first, second = trial["runs"]
    assert first["ended_how"] == (
        "exited with code 3: rank 1 of 2 exited with code 3; restart 1 of 1"
    )
    assert second["ended_how"] == "exited with code 0; completed"
    rank1 = [line["text"] for line in log_page(master, trial["id"], rank=1)]
    assert "rank 1 crashes in run 1" in rank1
    assert master.metrics(trial["id"], "validation", "val_loss") == [(1, 3.0)]


def test_an_unknown_launcher_is_refused_at_submit(master):
    bad = config().replace("torch_distributed", "does_not_exist")
    r = master.post_experiment(bad, CODE)
    assert r.status_code == 422, r.text
    (detail,) = r.json()["error"]["details"]
    assert detail["path"] == "entrypoint"
    assert "shipyard.launch.torch_distributed" in detail["message"]


def test_a_hung_rank_tears_the_gang_down_after_the_heartbeat_timeout(master):
    # Rank 1 hangs at step 7; the chief blocks in the next collective (should_preempt), so
    # its heartbeat stops: the master kills the whole gang and restarts it from step 5.
    exp = master.create(
        """
name: hung-rank
entrypoint: python3 -m shipyard.launch.torch_distributed python3 gang_steps.py
hyperparameters: {steps: 12, hang_rank: 1, hang_at: 7}
resources: {slots_per_trial: 2}
searcher: {name: single, metric: loss}
max_restarts: 1
heartbeat_timeout: 3
""",
        CODE,
    )
    done = master.wait(exp["id"], timeout=120)
    trial = master.trial(done["trials"][0]["id"])
    assert done["state"] == "COMPLETED", trial
    hung, rerun = trial["runs"]
    assert "no heartbeat for" in hung["ended_how"] and hung["ended_how"].endswith(
        "(heartbeat_timeout: 3 s); restart 1 of 1"
    ), hung
    texts = [line["text"] for line in log_page(master, trial["id"], rank=1)]
    assert "rank 1 hangs at step 7" in texts and "rank 1 resumed from step 5" in texts
    assert [s for s, _ in master.metrics(trial["id"], "training", "loss")] == list(range(1, 13))
    assert not [p for p in _processes_of(master)], "a rank of the hung run is still alive"
    # Each rank of each run recorded the environment it ran in.
    for run_id in (1, 2):
        described = master.http.get(
            f"/trials/{trial['id']}/environment", params={"run_id": run_id}
        ).json()
        assert [r["rank"] for r in described["ranks"]] == [0, 1], described


def _processes_of(master: Master) -> list[int]:
    """Processes still running in the master's trial directories."""
    return procs.in_directory(str(master.home / "trials"))
