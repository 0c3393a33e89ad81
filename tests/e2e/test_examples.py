"""Every example experiment, submitted to a real master as a user would."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.master import Master

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
