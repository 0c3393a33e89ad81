"""Determined's `entrypoint: model_def:MyTrial` on a real master: a PyTorchTrial on the digits
data with a learning-rate scheduler, trained by real trial processes on 1 and 2 slots, and
resumed after a kill -9 with its metrics exactly once."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

from tests.e2e.master import Master
from tests.fixtures import procs
from tests.fixtures.require import module

torch = module("torch", "the torch extra; make setup installs it")
module("sklearn", "the torch extra; make setup installs it")

from tests.integrations.digits_trial import digits  # noqa: E402

pytestmark = pytest.mark.torch

TRIAL_CODE = Path(__file__).parents[1] / "integrations" / "determined_trial_code"


@pytest.fixture(scope="module")
def master(tmp_path_factory):
    """Four slots: the three experiments below run at once (a trial process start is most
    of their time)."""
    m = Master(tmp_path_factory.mktemp("determined_trial_master") / "home", slots=4)
    yield m.start()
    m.stop()


@pytest.fixture(scope="module")
def context(tmp_path_factory) -> Path:
    """The trial's code and a small slice of the digits (10 batches of 32 an epoch)."""
    directory = tmp_path_factory.mktemp("determined_trial")
    shutil.copy(TRIAL_CODE / "model_def.py", directory)
    x, y, val_x, val_y = digits()
    torch.save((x[:320], y[:320], val_x[:200], val_y[:200]), directory / "digits.pt")
    return directory


def config(*, slots: int = 1, sleep: float = 0.0, length: str = "{batches: 30}") -> str:
    return f"""
name: determined-pytorch-trial
entrypoint: model_def:DigitsTrial
hyperparameters:
  global_batch_size: 32
  hidden: 32
  lr: 0.05
  sleep: {sleep}
searcher: {{name: single, metric: validation_loss, max_length: {length}}}
resources: {{slots_per_trial: {slots}}}
min_validation_period: {{batches: 10}}
min_checkpoint_period: {{batches: 5}}
perform_initial_validation: true
reproducibility: {{experiment_seed: 7}}
max_restarts: 1
"""


def test_the_trial_code_imports_only_determined_torch_and_the_stdlib():
    tree = ast.parse((TRIAL_CODE / "model_def.py").read_text())
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            roots.add((node.module or "").split(".")[0])
    import sys

    assert roots - set(sys.stdlib_module_names) == {"determined", "torch"}


def kill9_when_checkpointed(master: Master, trial_id: int, steps: int) -> None:
    """SIGKILL every process of the trial once it has trained past ``steps``."""
    master.wait_for(
        lambda: master.trial(trial_id)["steps_completed"] >= steps, what=f"{steps} steps"
    )
    procs.kill(procs.in_directory(str(master.home / "trials" / str(trial_id))))


def validations(master: Master, trial_id: int) -> dict[int, float]:
    points = master.metrics(trial_id, "validation", "validation_loss")
    steps = [s for s, _ in points]
    assert len(steps) == len(set(steps)), steps  # each step once
    return dict(points)


@pytest.fixture(scope="module")
def runs(master, context) -> dict[str, int]:
    """Trial ids of: "whole" (1 slot), "killed" (the same, SIGKILLed mid-way) and "two" (2
    slots, 2 epochs, SIGKILLed mid-way), all ended."""
    exps = {
        "whole": master.create(config(), context),
        "killed": master.create(config(sleep=0.1), context),  # slow enough to kill mid-way
        "two": master.create(config(slots=2, sleep=0.1, length="{epochs: 2}"), context),
    }
    trials = {name: exp["trials"][0]["id"] for name, exp in exps.items()}
    for name in ("killed", "two"):
        kill9_when_checkpointed(master, trials[name], 8)
    for name, exp in exps.items():
        state = master.wait(exp["id"], timeout=120)["state"]
        assert state == "COMPLETED", (name, master.logs(trials[name])[-30:])
    return trials


def test_one_slot_killed_and_resumed_matches_an_uninterrupted_run(master, runs):
    whole, killed = runs["whole"], runs["killed"]
    assert master.trial(killed)["run_id"] == 2  # restarted from its checkpoint
    expected = validations(master, whole)
    assert sorted(expected) == [0, 10, 20, 30]  # perform_initial_validation, then every 10
    assert validations(master, killed) == expected  # resumed exactly
    # Training means are reported at each checkpoint (every 5), as Determined reports them.
    whole_losses = master.metrics(whole, "training", "loss")
    assert [s for s, _ in whole_losses] == [5, 10, 15, 20, 25, 30]
    assert master.metrics(killed, "training", "loss") == whole_losses
    # The scheduler (StepLR every 5 batches, gamma 0.8) stepped every batch, through the kill.
    lr = dict(master.metrics(killed, "training", "lr"))
    assert lr[30] == pytest.approx(0.05 * 0.8**5)


def test_two_slots_run_a_rank_per_slot_and_resume_after_a_kill(master, runs):
    trial_id = runs["two"]
    logs = master.logs(trial_id)
    assert master.trial(trial_id)["run_id"] == 2
    assert sum("starting 2 rank(s)" in line for line in logs) == 2  # each run, one per slot
    # 2 ranks of 16 samples a batch: an epoch is 10 batches of each rank's half.
    assert sorted(validations(master, trial_id)) == [0, 10, 20]
    assert master.trial(trial_id)["steps_completed"] == 20


def test_a_pause_in_the_first_epoch_does_not_end_a_length_in_epochs(master, context):
    """{epochs: 2} is the searcher's time in epochs (the runner reports them with each
    validation), not 2 of the trial's batches: paused at batch 3, the trial resumes and
    trains its 20 batches."""
    exp = master.create(config(sleep=0.1, length="{epochs: 2}"), context)
    assert exp["config"]["searcher"]["time_metric"] == "epochs"
    trial_id = exp["trials"][0]["id"]
    master.wait_for(lambda: master.trial(trial_id)["steps_completed"] >= 3, what="3 steps")
    master.http.post(f"/experiments/{exp['id']}/pause").raise_for_status()
    master.wait_for(
        lambda: master.trial(trial_id)["runs"][0].get("ended_how"), timeout=60, what="the stop"
    )
    assert master.trial(trial_id)["steps_completed"] < 20
    master.http.post(f"/experiments/{exp['id']}/activate").raise_for_status()
    assert master.wait(exp["id"], timeout=120)["state"] == "COMPLETED"
    trial = master.trial(trial_id)
    assert len(trial["runs"]) == 2 and trial["steps_completed"] == 20
    assert master.metrics(trial_id, "validation", "epochs")[-1] == (20, 2)
