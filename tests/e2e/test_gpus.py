"""GPU slots: found with nvidia-smi, and each trial pinned to its GPU.

This machine has no GPU, so nvidia-smi is the one boundary faked here: a script on PATH
that prints what nvidia-smi prints for two GPUs. Everything else is the real master.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from tests.e2e.master import Master

CODE = Path(__file__).parent / "trial_code"
FAKE_NVIDIA_SMI = """#!/bin/sh
echo "0, Fake GPU 80GB, GPU-1111"
echo "1, Fake GPU 80GB, GPU-2222"
"""
CONFIG = """
name: gpus
entrypoint: python3 env_probe.py
hyperparameters: {x: {type: categorical, vals: [1, 2]}}
searcher: {name: grid, metric: val_loss}
"""


def test_trials_are_pinned_to_the_gpus_nvidia_smi_reports(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "nvidia-smi"
    fake.write_text(FAKE_NVIDIA_SMI)
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    master = Master(tmp_path / "home").start()
    try:
        slots = master.http.get("/slots").json()
        assert [(s["id"], s["kind"]) for s in slots] == [("gpu0", "gpu"), ("gpu1", "gpu")]
        done = master.wait(master.create(CONFIG, CODE)["id"])
        assert done["state"] == "COMPLETED"
        seen = set()
        for trial in done["trials"]:
            lines = master.logs(trial["id"])
            visible = next(line for line in lines if line.startswith("CUDA_VISIBLE_DEVICES="))
            seen.add(visible)
        assert seen <= {"CUDA_VISIBLE_DEVICES=0", "CUDA_VISIBLE_DEVICES=1"}
        assert seen  # every trial saw exactly one GPU
    finally:
        master.stop()
