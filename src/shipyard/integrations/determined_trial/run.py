"""The command of a trial whose entrypoint is ``model_def:MyTrial``:
``python3 -m shipyard.integrations.determined_trial.run model_def:MyTrial``.

With several slots (or nodes) it starts itself once per slot under
``shipyard.launch.torch_distributed``, as Determined starts a legacy trial under its own
launcher; each rank then trains the trial with the Trainer through ``shipyard.core``.
"""

from __future__ import annotations

import os
import sys

from shipyard.common.determined_shim import shim_dir, shim_enabled

PROG = "shipyard.integrations.determined_trial.run"
LAUNCHER = "shipyard.launch.torch_distributed"


def _needs_launcher(env: dict[str, str] | os._Environ[str]) -> bool:
    """More than one slot here (or more nodes), and no launcher started us yet."""
    if "WORLD_SIZE" in env:
        return False
    slots = [s for s in env.get("SHIPYARD_SLOT_IDS", "").split(",") if s.strip()]
    nodes = int(env.get("SHIPYARD_NUM_NODES", "1") or 1)
    return len(slots) > 1 or nodes > 1


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0].startswith("-"):
        print(f"usage: python3 -m {PROG} MODULE:CLASS (e.g. model_def:MyTrial)", file=sys.stderr)
        return 2
    if _needs_launcher(os.environ):
        python = sys.executable
        os.execv(python, [python, "-m", LAUNCHER, python, "-m", PROG, argv[0]])
    if shim_enabled(os.environ) and shim_dir() not in sys.path:
        sys.path.insert(0, shim_dir())  # the user's `import determined` is Shipyard's
    from shipyard.integrations.determined_trial._runner import run_trial

    run_trial(argv[0])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
