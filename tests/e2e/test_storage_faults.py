"""Checkpoint storage that fills up under a running trial (a real tmpfs, see small_disk)."""

from __future__ import annotations

import io
import json
import re
import tarfile
from pathlib import Path

from tests.fixtures.small_disk import fill_disk

CODE = Path(__file__).parent / "trial_code"


def test_a_full_checkpoint_disk_fails_the_run_and_the_trial_resumes_from_its_last_checkpoint(
    master, small_disk, tmp_path
):
    disk = small_disk(512 * 1024)
    store = disk / "store"
    gate = tmp_path / "gate"  # checkpoint_gate.py waits for gate.<run> before checkpoint 10
    config = f"""
name: storage-faults
entrypoint: python3 checkpoint_gate.py
hyperparameters: {{steps: 10, ckpt_every: 5, ckpt_bytes: 65536, gate: {gate}, gate_step: 10}}
searcher: {{name: single, metric: val_loss}}
max_restarts: 3
checkpoint_storage:
  type: shared_fs
  host_path: {store}
  save_trial_latest: 2
"""
    exp = master.create(config, CODE)
    trial_id = exp["trials"][0]["id"]

    # Run 1: checkpoint 5 is registered, then the disk fills before checkpoint 10.
    first = master.wait_for(
        lambda: master.trial(trial_id)["latest_checkpoint"], what="checkpoint 5 registered"
    )
    ballast = fill_disk(disk)
    Path(f"{gate}.1").touch()

    trial = master.wait_for(
        lambda: (t := master.trial(trial_id))["runs"][0]["ended_how"] and t,
        what="run 1 ended",
    )
    reason = (
        rf"exited with code 1: CheckpointWriteError: cannot write checkpoint (\S+) to "
        rf"{re.escape(str(store))}/\1: \[Errno 28\] No space left on device"
        r"(: '[^']+')?; restart 1 of 3"  # the file, when the OS error names one (ext4: mkdir)
    )
    failed = re.fullmatch(reason, trial["runs"][0]["ended_how"])
    assert failed, trial["runs"][0]["ended_how"]
    assert re.fullmatch(reason, trial["exit_reason"])  # "Why it ended" while it restarts
    assert failed.group(1) != first
    kept = [p.name for p in store.iterdir() if p.name[0] != "." and p.name != "tensorboard"]
    assert kept == [first]  # the partial one is gone
    assert trial["latest_checkpoint"] == first

    # Run 2 resumes from checkpoint 5; space is freed before it writes checkpoint 10.
    master.wait_for(lambda: master.trial(trial_id)["run_id"] == 2, what="run 2 launched")
    ballast.unlink()
    Path(f"{gate}.2").touch()
    done = master.wait(exp["id"])

    assert done["state"] == "COMPLETED"
    trial = master.trial(trial_id)
    assert (trial["state"], trial["restarts"], trial["run_id"]) == ("COMPLETED", 1, 2)
    assert trial["runs"][1]["ended_how"] == "exited with code 0; completed"  # run 1's error reset
    logs = master.logs(trial_id)
    assert "resumed from step 5" in logs
    assert any(line.startswith("shipyard.common.errors.CheckpointWriteError: ") for line in logs)
    assert [s for s, _ in master.metrics(trial_id, "training", "loss")] == list(range(1, 11))
    runs = dict(master.metrics(trial_id, "training", "run"))
    assert (runs[5], runs[6], runs[10]) == (1, 2, 2)  # steps 6-10 again, one row each

    # Checkpoint 5 is still listed and restorable.
    listed = master.http.get(f"/experiments/{exp['id']}/checkpoints").json()
    assert sorted((c["steps_completed"], c["state"]) for c in listed) == [
        (5, "COMPLETED"),
        (10, "COMPLETED"),
    ]
    assert next(c["uuid"] for c in listed if c["steps_completed"] == 5) == first
    download = master.http.get(f"/checkpoints/{first}/download")
    assert download.status_code == 200
    with tarfile.open(fileobj=io.BytesIO(download.content)) as tar:
        state = tar.extractfile("state.json")
        assert state is not None and json.load(state) == {"step": 5}
