"""Checkpoint retention (save_trial_latest / save_trial_best / save_experiment_best), and
the environment and bind mounts a trial runs with."""

from __future__ import annotations

from pathlib import Path

import pytest

CODE = Path(__file__).parent / "trial_code"


@pytest.fixture(scope="module")
def master(shared_master):
    return shared_master


def test_retention_keeps_the_latest_and_the_best_and_deletes_the_rest(master):
    # steps.py checkpoints every 2 steps and validates at each checkpoint with
    # val_loss = x^2 + 1/step: the latest checkpoint is also the best one.
    config = f"""
name: retention
entrypoint: python3 steps.py
hyperparameters: {{steps: 10, ckpt_every: 2, x: 0.5}}
searcher: {{name: single, metric: val_loss}}
checkpoint_storage:
  type: shared_fs
  host_path: {master.home / "store"}
  save_trial_latest: 2
  save_trial_best: 1
"""
    done = master.wait(master.create(config, CODE)["id"])

    def kept_steps():
        kept = master.http.get(f"/experiments/{done['id']}/checkpoints").json()
        return kept if sorted(c["steps_completed"] for c in kept) == [8, 10] else None

    # retention runs as housekeeping, a few seconds after the trial ends
    kept = master.wait_for(kept_steps, timeout=30, what="checkpoints 2, 4, 6 deleted")
    # (hidden entries, like .writing for checkpoints being written, are not checkpoints)
    on_disk = sorted(p.name for p in (master.home / "store").iterdir() if p.name[0] != ".")
    assert on_disk == sorted(c["uuid"] for c in kept)
    assert all(c["storage_path"].startswith(str(master.home / "store")) for c in kept)


def test_trial_gets_the_configured_environment_and_bind_mounts(master, tmp_path):
    shared = tmp_path / "datasets"
    shared.mkdir()
    (shared / "train.csv").write_text("a,b\n")
    config = f"""
name: env
entrypoint: [python3, env_probe.py]
environment:
  environment_variables: [GREETING=hello world]
bind_mounts:
  - host_path: {shared}
    container_path: data
hyperparameters: {{}}
searcher: {{name: single, metric: val_loss}}
"""
    done = master.wait(master.create(config, CODE)["id"])
    trial = done["trials"][0]
    assert "GREETING=hello world" in master.logs(trial["id"])
    workdir = master.home / "trials" / str(trial["id"])
    assert (workdir / "data" / "train.csv").read_text() == "a,b\n"
