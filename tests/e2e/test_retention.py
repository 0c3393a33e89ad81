"""Checkpoint retention (save_trial_latest / save_trial_best / save_experiment_best) on a
shared file system and in S3 (a real SeaweedFS server: tests/fixtures/s3.py), checked in
the store itself; and the environment and bind mounts a trial runs with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

CODE = Path(__file__).parent / "trial_code"
# steps.py checkpoints at steps 2, 4, 6, 8, 10 and validates there with val_loss = x^2 + 1/step;
# larger is better here, so each trial's best checkpoint is its first, not its latest.
MATRIX = """
name: retention-{store}
entrypoint: python3 steps.py
hyperparameters:
  steps: 10
  ckpt_every: 2
  x: {{type: categorical, vals: [0.1, 0.9]}}
searcher: {{name: grid, metric: val_loss, smaller_is_better: false}}
checkpoint_storage: {storage}
"""
POLICY = {"save_trial_latest": 2, "save_trial_best": 1, "save_experiment_best": 2}
# Each policy keeps one checkpoint no other does: x=0.1 step 8 (the 2nd latest), x=0.1 step 2
# (the trial's best), x=0.9 step 4 (the experiment's 2nd best); 4 and 6 of 0.1, 6 of 0.9 go.
KEPT = {0.1: [2, 8, 10], 0.9: [2, 4, 8, 10]}


@pytest.fixture(scope="module")
def master(shared_master):
    return shared_master


class SharedFs:
    def __init__(self, master) -> None:
        self.base = master.home / "store"
        self.storage = {"type": "shared_fs", "host_path": str(self.base), **POLICY}

    def files(self) -> dict[str, set[str]]:
        """uuid -> file names of every checkpoint directory (a hidden entry, like .writing
        for checkpoints being written, is not one; nor are the trials' TensorBoard files)."""
        return {
            d.name: {f.name for f in d.iterdir()}
            for d in self.base.iterdir()
            if d.name[0] != "." and d.name != "tensorboard"
        }


class S3:
    def __init__(self, server) -> None:
        self.client, self.bucket = server.client(), server.new_bucket()
        self.storage = {**server.storage(self.bucket, "retention"), **POLICY}

    def files(self) -> dict[str, set[str]]:
        """uuid -> file names of every object in the bucket, from its own listing."""
        found: dict[str, set[str]] = {}
        listed = self.client.list_objects_v2(Bucket=self.bucket, Prefix="retention/")
        for item in listed.get("Contents", []):
            uuid, _, name = item["Key"].removeprefix("retention/").partition("/")
            if uuid[0] != "." and uuid != "tensorboard":  # the trials' TensorBoard files
                found.setdefault(uuid, set()).add(name)
        return found


@pytest.mark.parametrize("store", ["shared_fs", "s3"])
def test_retention_keeps_the_latest_and_the_best_and_deletes_the_rest(master, store, request):
    where = SharedFs(master) if store == "shared_fs" else S3(request.getfixturevalue("s3_server"))
    config = MATRIX.format(store=store, storage=json.dumps(where.storage))
    done = master.wait(master.create(config, CODE)["id"])
    x_of = {t["id"]: t["hparams"]["x"] for t in done["trials"]}

    def kept_steps():
        kept = master.http.get(f"/experiments/{done['id']}/checkpoints").json()
        steps = {
            x: sorted(c["steps_completed"] for c in kept if x_of[c["trial_id"]] == x) for x in KEPT
        }
        # A checkpoint is marked DELETED before its files go: the list changes first.
        return kept if steps == KEPT and len(where.files()) == len(kept) else None

    # retention runs as housekeeping, a few seconds after a trial and its experiment end
    kept = master.wait_for(
        kept_steps, timeout=30, what="checkpoints 4, 6 of x=0.1, 6 of 0.9 deleted"
    )
    assert where.files() == {c["uuid"]: {"state.json", "metadata.json"} for c in kept}
    base = where.storage.get("host_path") or f"s3://{where.storage['bucket']}/retention"
    assert all(c["storage_path"] == f"{base}/{c['uuid']}" for c in kept)


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
