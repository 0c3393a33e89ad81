"""Process helpers of the MPI launcher (Linux /proc where it must): signals that tolerate a
process already gone, "is it running", dying with the parent, and a process's descendants."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path

PR_SET_PDEATHSIG = 1


def send(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def killpg(pid: int, sig: int) -> None:
    """``sig`` to the process group ``pid`` leads (a rank's: Open MPI makes one per rank)."""
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        return
    except PermissionError:
        send(pid, sig)


def alive(pid: int) -> bool:
    """A process that runs (not a zombie waiting for its parent)."""
    stat = _stat(pid)
    return stat is not None and stat[0] not in ("Z", "X")


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children, their children...), read from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat is not None:
                children.setdefault(int(stat[1]), []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def group_leaders(pids: list[int]) -> list[int]:
    """Those of ``pids`` that lead a process group of their own (Open MPI's ranks do)."""
    leaders = []
    for pid in pids:
        with contextlib.suppress(OSError):
            if os.getpgid(pid) == pid:
                leaders.append(pid)
    return leaders


def die_with_parent() -> Callable[[], None] | None:
    """A preexec_fn that makes the child get SIGKILL when its parent dies (Linux), resolved
    before the fork: the child only makes the one system call."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.restype = ctypes.c_int
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    sigkill = int(signal.SIGKILL)

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, sigkill, 0, 0, 0)

    return preexec


def _stat(pid: int) -> list[str] | None:
    """/proc/PID/stat's fields after the command name: state, ppid, pgrp, ..."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[-1].split()
