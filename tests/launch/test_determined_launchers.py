"""Determined's launchers, as the `determined` shim presents them in a trial, run Shipyard's:
one rank per slot with torch's and Shipyard's variables. Run here without a master, with
the shim on PYTHONPATH as a trial has it and the slots a trial would get."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

from shipyard.common.determined_shim import shim_dir

SHOW = "import os; print('rank', os.environ['RANK'], os.environ['SHIPYARD_SIZE'], flush=True)"


def run(*args: str, slots: str = "cpu0,cpu1") -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=shim_dir(), SHIPYARD_SLOT_IDS=slots)
    for name in ("SHIPYARD_MASTER", "SHIPYARD_TRIAL_ID", "SHIPYARD_DETERMINED_SHIM"):
        env.pop(name, None)
    return subprocess.run(
        [sys.executable, "-m", *args], env=env, capture_output=True, text=True, timeout=120
    )


def test_torch_distributed_runs_one_rank_per_slot_and_ignores_torchrun_options():
    done = run(
        "determined.launch.torch_distributed",
        "--nproc_per_node",
        "8",
        "--",
        sys.executable,
        "-c",
        SHOW,
    )
    assert done.returncode == 0, done.stderr
    assert "ignoring --nproc_per_node 8" in done.stderr
    assert "rank 0 2" in done.stdout and "rank 1 2" in done.stdout


def test_tensorflow_gives_each_worker_tf_config():
    code = "import json, os; print('workers', len(json.loads(os.environ['TF_CONFIG'])"
    code += "['cluster']['worker']), flush=True)"
    done = run("determined.launch.tensorflow", "--port", "1", "--", sys.executable, "-c", code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("workers 2") == 2


def test_wrap_rank_runs_the_script_and_deepspeed_says_what_is_missing():
    done = run("determined.launch.wrap_rank", "0", sys.executable, "-c", "print('wrapped')")
    assert (done.returncode, done.stdout) == (0, "wrapped\n"), done.stderr
    if importlib.util.find_spec("deepspeed") is None:
        deepspeed = run("determined.launch.deepspeed", "python3", "train.py")
        assert deepspeed.returncode == 2
        assert "DeepSpeed is not installed" in deepspeed.stderr
        assert "Traceback" not in deepspeed.stderr
    empty = run("determined.launch.torch_distributed")
    assert empty.returncode == 2 and "no script given" in empty.stderr
