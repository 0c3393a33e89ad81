"""The PyTorch Lightning and Hugging Face examples, submitted to a real master as a user would:
each trial completes, its validation metrics are recorded and every checkpoint the framework
saved is registered; the Lightning example on 2 slots runs as one gang of 2 ranks in which
only the chief reports and checkpoints."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.e2e.master import Master
from tests.fixtures import require

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# (example, config): the experiments this module runs, submitted together.
LIGHTNING = ("digits_lightning", "const.yaml")
LIGHTNING_DDP = ("digits_lightning", "distributed.yaml")
HUGGINGFACE = ("digits_huggingface", "const.yaml")
NEEDS = {LIGHTNING: "lightning", LIGHTNING_DDP: "lightning", HUGGINGFACE: "transformers"}


@pytest.fixture(scope="module")
def experiments(tmp_path_factory):
    """One master (2 slots) and the experiments of the installed frameworks, all submitted at
    once: the two one-slot trials run side by side, then the two-slot one. Maps each
    (example, config) to its experiment id."""
    home = tmp_path_factory.mktemp("frameworks") / "home"
    master = Master(home).start()
    ids = {}
    for key, module in NEEDS.items():
        if importlib.util.find_spec(module) is None:
            continue
        example, config = key
        # Keep every checkpoint: the tests look for each one the framework saved.
        keep_all = f"checkpoint_storage:\n  type: shared_fs\n  host_path: {home / 'store'}\n"
        keep_all += "  save_trial_latest: 100\n"
        text = (EXAMPLES / example / config).read_text() + keep_all
        ids[key] = master.create(text, EXAMPLES / example)["id"]
    yield master, ids
    master.stop()


def trained(
    experiments, key, *, metric: str, length: int, preempted_at: int | None = None
) -> tuple[Master, dict, dict]:
    """The experiment's one trial completed ``length`` steps: training loss reported every 10
    steps, ``metric`` validated and a checkpoint registered every 50, each step once (and
    all three at the step where it was preempted, if it was). Returns the master, the trial
    and the checkpoints by step."""
    master, ids = experiments
    done = master.wait(ids[key], timeout=300)
    trial = master.trial(done["trials"][0]["id"])
    assert done["state"] == "COMPLETED", trial
    also = {preempted_at} if preempted_at else set()
    every_10, every_50 = range(10, length + 1, 10), range(50, length + 1, 50)
    assert steps(master, trial["id"], "training", "loss") == sorted({*every_10, *also})
    assert steps(master, trial["id"], "validation", metric) == sorted({*every_50, *also})
    assert done["best_validation"] > 0.8
    listed = master.http.get(f"/experiments/{done['id']}/checkpoints").json()
    saved = {c["steps_completed"]: c for c in listed}
    assert sorted(c["steps_completed"] for c in listed) == sorted({*every_50, *also})
    return master, trial, saved


def steps(master: Master, trial_id: int, group: str, name: str) -> list[int]:
    return [step for step, _value in master.metrics(trial_id, group, name)]


@pytest.mark.lightning
def test_the_lightning_example_trains_reports_and_checkpoints(experiments):
    """Each of ModelCheckpoint's saves (one per validation) is registered at its step."""
    require.module("lightning", "the lightning extra; make setup installs it")
    _, _, saved = trained(experiments, LIGHTNING, metric="validation_accuracy", length=200)
    for step, checkpoint in saved.items():
        name = checkpoint["metadata"]["lightning_file"]
        assert name.endswith(f"step={step}.ckpt") and checkpoint["resources"][name] > 0


@pytest.mark.huggingface
def test_the_huggingface_example_trains_reports_and_checkpoints(experiments):
    """Each checkpoint-<step> directory the Trainer saves is registered with its files."""
    require.module("transformers", "the huggingface extra; make setup installs it")
    _, _, saved = trained(experiments, HUGGINGFACE, metric="eval_accuracy", length=200)
    for checkpoint in saved.values():
        assert checkpoint["metadata"]["framework"] == "huggingface"
        files = set(checkpoint["resources"])
        assert {"trainer_state.json", "model.safetensors", "optimizer.pt"} <= files


@pytest.mark.lightning
def test_the_lightning_example_on_two_slots_is_one_gang_that_resumes_after_a_pause(
    experiments,
):
    """Lightning joins the 2 ranks the launcher started (rank 1 is Lightning's rank 1 of 2:
    it did not start processes of its own). Paused mid-training, both ranks stop at the same
    step after a checkpoint; activated, the gang resumes from it. Each step is reported once
    and each checkpoint registered once (two ranks storing would register two a step)."""
    require.module("lightning", "the lightning extra; make setup installs it")
    master, ids = experiments
    exp_id = ids[LIGHTNING_DDP]
    trial_id = master.experiment(exp_id)["trials"][0]["id"]
    master.wait_for(lambda: master.trial(trial_id)["steps_completed"] >= 10, timeout=300)
    assert master.http.post(f"/experiments/{exp_id}/pause").json()["state"] == "PAUSED"
    master.wait_for(lambda: master.trial(trial_id)["state"] == "PAUSED", timeout=60)
    paused_at = master.trial(trial_id)["steps_completed"]
    assert 10 <= paused_at < 200
    assert master.http.post(f"/experiments/{exp_id}/activate").json()["state"] == "ACTIVE"

    _, trial, saved = trained(
        experiments,
        LIGHTNING_DDP,
        metric="validation_accuracy",
        length=200,
        preempted_at=paused_at,
    )
    assert saved[paused_at]["metadata"]["lightning_file"] == "shipyard.ckpt"
    first, second = trial["runs"]
    assert "preempted" in first["ended_how"] and "completed" in second["ended_how"]
    assert sorted(first["slots"]) == sorted(second["slots"]) == ["cpu0", "cpu1"]
    page = master.http.get(f"/trials/{trial_id}/logs", params={"rank": 1, "limit": 10_000})
    rank1 = [line["text"] for line in page.json()["lines"]]
    assert rank1.count("Initializing distributed: GLOBAL_RANK: 1, MEMBER: 2/2") == 2, rank1
