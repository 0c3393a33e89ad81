"""The CPU: its model and flags (what decides which kernels a library picks), from the
first processor block of /proc/cpuinfo on Linux; platform.processor() elsewhere."""

from __future__ import annotations

import os
import platform
from typing import Any

CPUINFO = "/proc/cpuinfo"
# The model's line on x86, then on ARM, POWER and MIPS kernels.
MODEL_KEYS = ("model name", "Hardware", "Processor", "cpu", "cpu model")
FLAG_KEYS = ("flags", "Features")


def cpu_section(out: dict[str, Any], problems: list[str]) -> None:
    out["logical_cpus"] = os.cpu_count()
    fields = _first_processor()
    if fields is None:
        out["model"] = platform.processor()
        out["flags"] = []
        return
    out["model"] = next((fields[k] for k in MODEL_KEYS if fields.get(k)), "")
    flags = next((fields[k] for k in FLAG_KEYS if fields.get(k)), "")
    out["flags"] = sorted(set(flags.split()))


def _first_processor() -> dict[str, str] | None:
    """The first block only: the kernel writes /proc/cpuinfo as it is read, and on a
    machine with hundreds of CPUs the whole file takes a while."""
    try:
        f = open(CPUINFO, encoding="utf-8", errors="replace")
    except OSError:
        return None  # not Linux
    fields: dict[str, str] = {}
    with f:
        for line in f:
            if not line.strip():
                if fields:
                    break
                continue
            key, colon, value = line.partition(":")
            if colon:
                fields.setdefault(key.strip(), value.strip())
    return fields
