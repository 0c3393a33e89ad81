"""Find GPUs with nvidia-smi; with none, the local backend offers CPU slots."""

from __future__ import annotations

import shutil
import subprocess

from shipyard.backends.base import Slot, numbered_slots


def detect_gpus() -> list[Slot]:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return []
    try:
        out = subprocess.run(
            [exe, "--query-gpu=index,name,uuid", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return parse_nvidia_smi(out)


def parse_nvidia_smi(csv_text: str) -> list[Slot]:
    slots = []
    for line in csv_text.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 3 or not parts[0].isdigit():
            continue
        index = int(parts[0])
        slots.append(
            Slot(id=f"gpu{index}", kind="gpu", device=f"{parts[1]} {parts[2]}", index=index)
        )
    return slots


def cpu_slots(count: int) -> list[Slot]:
    return numbered_slots("cpu", count, "cpu")
