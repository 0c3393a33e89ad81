"""A training script with no master: metrics are printed, checkpoints land in ./checkpoints."""

from __future__ import annotations

import json

from tests.core.conftest import run_script

SCRIPT = """
import shipyard.core

with shipyard.core.init(hparams={"lr": 0.5}) as ctx:
    assert ctx.local and ctx.info.trial_id is None
    lr = ctx.info.hparams["lr"]
    for step in range(1, 4):
        ctx.train.report_training_metrics(step, {"loss": lr / step})
    ctx.train.report_validation_metrics(3, {"accuracy": 0.75})
    with ctx.checkpoint.store_path({"epoch": 1}, steps_completed=3) as (path, uuid):
        (path / "weights.txt").write_text("0.125")
    assert ctx.info.latest_checkpoint == uuid
    with ctx.checkpoint.restore_path(uuid) as restored:
        print("restored", (restored / "weights.txt").read_text())
    assert not ctx.preempt.should_preempt() and not ctx.searcher.should_stop()
"""


def test_local_script_prints_metrics_and_writes_a_checkpoint(tmp_path):
    result = run_script(tmp_path, SCRIPT)

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "[shipyard] training steps=1 loss=0.5" in lines
    assert "[shipyard] training steps=3 loss=0.166667" in lines
    assert "[shipyard] validation steps=3 accuracy=0.75" in lines
    assert "restored 0.125" in lines
    (checkpoint,) = (tmp_path / "checkpoints").iterdir()
    metadata = json.loads((checkpoint / "metadata.json").read_text())
    assert metadata == {
        "epoch": 1,
        "uuid": checkpoint.name,
        "steps_completed": 3,
        "resources": {"weights.txt": 5},
    }


def test_checkpoint_storage_variable_is_used_in_local_mode(tmp_path):
    storage = tmp_path / "elsewhere"
    script = """
import shipyard.core
with shipyard.core.init() as ctx:
    with ctx.checkpoint.store_path({"steps_completed": 9}) as (path, uuid):
        (path / "w").write_text("1")
    print("uuid", uuid)
"""
    env = {
        "SHIPYARD_CHECKPOINT_STORAGE": json.dumps({"type": "shared_fs", "base_path": str(storage)})
    }

    result = run_script(tmp_path, script, env=env)

    assert result.returncode == 0, result.stderr
    uuid = result.stdout.split("uuid ")[1].split()[0]
    assert json.loads((storage / uuid / "metadata.json").read_text())["steps_completed"] == 9
    assert not (tmp_path / "checkpoints").exists()


def test_metrics_reported_before_a_crash_are_still_delivered(tmp_path):
    script = """
import shipyard.core
with shipyard.core.init() as ctx:
    for step in range(500):
        ctx.train.report_training_metrics(step, {"loss": 1.0})
    raise RuntimeError("diverged")
"""
    result = run_script(tmp_path, script)

    assert result.returncode != 0
    assert "RuntimeError: diverged" in result.stderr
    assert result.stdout.count("[shipyard] training") == 500
    assert "[shipyard] training steps=499 loss=1" in result.stdout.splitlines()
