"""Every example experiment, submitted to a real master as a user would."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from tests.e2e.master import Master
from tests.fixtures import procs

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="module")
def master(tmp_path_factory):
    m = Master(tmp_path_factory.mktemp("examples") / "home").start()
    yield m
    m.stop()


def _run(master, example: str, config: str) -> dict:
    directory = EXAMPLES / example
    exp = master.create((directory / config).read_text(), directory)
    return master.wait(exp["id"], timeout=600)


def test_quadratic_const_converges(master):
    done = _run(master, "quadratic", "const.yaml")
    assert done["state"] == "COMPLETED"
    assert done["best_validation"] < 1e-6  # lr 0.1 on (x - 3)^2 converges in 100 steps


def test_quadratic_random_runs_its_eight_trials(master):
    done = _run(master, "quadratic", "random.yaml")
    assert done["state"] == "COMPLETED" and done["num_trials"] == 8
    assert len({t["hparams"]["lr"] for t in done["trials"]}) == 8
    assert all(1e-3 <= t["hparams"]["lr"] <= 10**-0.5 for t in done["trials"])


def test_quadratic_grid_covers_the_grid(master):
    done = _run(master, "quadratic", "grid.yaml")
    points = {(round(t["hparams"]["lr"], 6), t["hparams"]["target"]) for t in done["trials"]}
    assert points == {(lr, target) for lr in (0.001, 0.01, 0.1) for target in (1.0, 5.0)}


@pytest.mark.torch
def test_digits_const_learns_through_the_master(master):
    done = _run(master, "digits_pytorch", "const.yaml")
    assert done["state"] == "COMPLETED"
    assert done["best_validation"] > 0.8  # validation accuracy
    ckpts = master.http.get(f"/experiments/{done['id']}/checkpoints").json()
    assert ckpts and all(c["resources"] for c in ckpts)


@pytest.mark.torch
def test_digits_adaptive_stops_the_weaker_trials(master):
    done = _run(master, "digits_pytorch", "adaptive.yaml")
    assert done["state"] == "COMPLETED" and done["num_trials"] == 6
    states = [t["state"] for t in done["trials"]]
    assert "STOPPED" in states and "COMPLETED" in states
    stopped = [t for t in done["trials"] if t["state"] == "STOPPED"]
    assert {t["steps_completed"] for t in stopped} == {150}  # at the first rung
    assert done["best_validation"] > 0.8


@pytest.mark.torch
def test_digits_distributed_trains_on_two_ranks_and_survives_a_killed_rank(master):
    """examples/digits_pytorch/distributed.yaml: the Trainer under the torch launcher on 2 CPU
    slots. Then the same run with rank 1 killed -9 mid-training: the gang restarts from its
    checkpoint and ends with exactly the undisturbed run's validation accuracy."""
    directory = EXAMPLES / "digits_pytorch"
    # Both runs get the same trial seed (a new experiment otherwise draws its own).
    config = (directory / "distributed.yaml").read_text()
    config += "reproducibility: {experiment_seed: 3}\n"
    undisturbed = master.wait(master.create(config, directory)["id"], timeout=600)
    assert undisturbed["state"] == "COMPLETED"
    trial = master.trial(undisturbed["trials"][0]["id"])
    assert sorted(trial["runs"][0]["slots"]) == ["cpu0", "cpu1"]
    assert undisturbed["best_validation"] > 0.8
    page = master.http.get(f"/trials/{trial['id']}/logs", params={"limit": 10_000}).json()
    launcher = [line["text"] for line in page["lines"] if line["stream"] == "launcher"]
    assert any(text.startswith("starting 2 rank(s) on cpu0,cpu1") for text in launcher)

    exp = master.create(config, directory)
    victim = master.wait_for(
        lambda: _rank_pid(master, exp["id"], rank=1, past_step=120), timeout=300
    )
    os.kill(victim, signal.SIGKILL)
    disturbed = master.wait(exp["id"], timeout=600)
    assert disturbed["state"] == "COMPLETED"
    runs = master.trial(disturbed["trials"][0]["id"])["runs"]
    assert len(runs) == 2 and "rank 1 of 2" in runs[0]["ended_how"], runs
    assert disturbed["best_validation"] == undisturbed["best_validation"]
    got = master.metrics(disturbed["trials"][0]["id"], "validation", "validation_accuracy")
    want = master.metrics(trial["id"], "validation", "validation_accuracy")
    assert got == want, (got, want, runs)


def _rank_pid(master: Master, exp_id: int, rank: int, past_step: int) -> int | None:
    """The pid of that rank of the experiment's running trial, once it trained past a step."""
    trials = master.experiment(exp_id)["trials"]
    if not trials or trials[0]["steps_completed"] < past_step:
        return None
    wanted = {
        "SHIPYARD_TRIAL_ID": str(trials[0]["id"]),
        "RANK": str(rank),
        "SHIPYARD_MASTER": master.url,
    }

    def is_that_rank(proc: Path) -> bool:
        env = procs.environ(proc)
        return all(env.get(name) == value for name, value in wanted.items())

    return next(iter(procs.find(is_that_rank)), None)
