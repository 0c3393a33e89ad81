"""The process between a trial's Ray actor and the trial: `python keeper.py ARGV...`.

The actor starts it as the leader of a new session; the trial runs in its process group.
If the actor's worker process dies (killed, node trouble), the kernel sends the keeper
SIGHUP (PR_SET_PDEATHSIG) and it kills the whole group, ranks of a launcher included: a
SIGKILL reaches only a direct child otherwise. A SIGTERM to the group is the trial's to
handle; the keeper waits for it and exits with its code (128+signal for a signal death).
When the trial is a container's CLI, the container lives outside the group: the actor names
a command in SHIPYARD_KEEPER_CLEANUP (JSON argv) that removes it, run before the group dies.

Run as a file, not a module: it needs only the standard library on the node.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys

_PR_SET_PDEATHSIG = 1
CLEANUP_ENV = "SHIPYARD_KEEPER_CLEANUP"
_CLEANUP_TIMEOUT_S = 30
_cleanup: list[str] = []


def _kill_group(*_: object) -> None:
    if _cleanup:
        try:
            subprocess.run(_cleanup, capture_output=True, timeout=_CLEANUP_TIMEOUT_S)
        except (OSError, subprocess.SubprocessError):
            pass
    os.killpg(0, signal.SIGKILL)


def main(argv: list[str]) -> int:
    parent = os.getppid()
    _cleanup[:] = json.loads(os.environ.pop(CLEANUP_ENV, "[]"))  # not the trial's
    signal.signal(signal.SIGHUP, _kill_group)
    # A handler, not SIG_IGN: handlers are reset at exec, so the trial gets SIGTERM as usual.
    signal.signal(signal.SIGTERM, lambda *_: None)
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGHUP)
    if os.getppid() != parent:  # the actor died before the prctl took effect
        _kill_group()
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL)
    except OSError as exc:
        print(f"shipyard: cannot start {argv[0]!r}: {exc}", file=sys.stderr, flush=True)
        return 127
    code = proc.wait()
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
