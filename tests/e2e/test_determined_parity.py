"""Determined configs on a real master: a checkpoint_storage of retention numbers only keeps
its checkpoints in the master's default storage, and a trial of slots_per_trial 0 runs on
the CPU, holding no slot, while another trial holds the master's only slot."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.master import Master

CODE = Path(__file__).parent / "trial_code"

PARTIAL_STORAGE = """
name: partial-storage
entrypoint: python3 steps.py
hyperparameters: {steps: 6, ckpt_every: 2}
searcher: {name: single, metric: val_loss}
checkpoint_storage:
  save_trial_latest: 2
  save_trial_best: 0
"""
HOLDER = """
name: holds-the-slot
entrypoint: python3 gated.py
hyperparameters: {gate: GATE}
searcher: {name: single, metric: loss}
"""
CPU_ONLY = """
name: cpu-only
entrypoint: python3 env_probe.py
searcher: {name: single, metric: val_loss}
resources: {slots_per_trial: 0}
"""


@pytest.fixture(scope="module")
def master(tmp_path_factory):
    m = Master(tmp_path_factory.mktemp("parity") / "home", slots=1).start()
    yield m
    m.stop()


def test_retention_numbers_alone_merge_with_the_masters_default_storage(master):
    done = master.wait(master.create(PARTIAL_STORAGE, CODE)["id"])
    assert done["state"] == "COMPLETED"
    default = master.home / "checkpoints"
    assert done["config"]["checkpoint_storage"] == {
        "type": "shared_fs",
        "host_path": str(default),
        "storage_path": None,
        "propagation": "rprivate",
        "container_path": None,
        "save_experiment_best": 0,
        "save_trial_best": 0,
        "save_trial_latest": 2,
    }

    def kept():
        listed = master.http.get(f"/experiments/{done['id']}/checkpoints").json()
        return listed if sorted(c["steps_completed"] for c in listed) == [4, 6] else None

    # Steps 2, 4, 6 were saved; retention (housekeeping, seconds after the end) keeps the
    # latest two, where the default storage's own numbers would keep only step 6.
    checkpoints = master.wait_for(kept, what="retention to keep steps 4 and 6")
    for ckpt in checkpoints:
        assert (default / ckpt["uuid"] / "state.json").is_file()
    # Not the writing marks, nor the trials' TensorBoard files (tensorboard/experiment-<id>).
    assert len([d for d in default.iterdir() if d.name[0] != "." and d.name != "tensorboard"]) == 2


def test_a_zero_slot_trial_runs_while_the_only_slot_is_held(master, tmp_path):
    gate = tmp_path / "gate"
    holder = master.create(HOLDER.replace("GATE", str(gate)), CODE)
    holder_trial = master.wait_for(
        lambda: next(iter(master.experiment(holder["id"])["trials"]), None),
        what="the holder's trial",
    )
    master.wait_for(
        lambda: master.trial(holder_trial["id"])["state"] == "RUNNING", what="the holder to run"
    )
    try:
        done = master.wait(master.create(CPU_ONLY, CODE)["id"])
        assert done["state"] == "COMPLETED"
        [trial] = done["trials"]
        logs = master.logs(trial["id"])
        assert "CUDA_VISIBLE_DEVICES=" in logs and "SHIPYARD_SLOT_IDS=" in logs  # no GPU, no slot
        assert master.trial(holder_trial["id"])["state"] == "RUNNING"  # it kept its slot
    finally:
        gate.touch()
    assert master.wait(holder["id"])["state"] == "COMPLETED"
