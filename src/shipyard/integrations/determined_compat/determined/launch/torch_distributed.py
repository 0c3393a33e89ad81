"""``python3 -m determined.launch.torch_distributed [TORCH_OVERRIDES... --] SCRIPT...``:
Shipyard's torch_distributed launcher, one rank per slot of the trial with torchrun's
variables. Shipyard sets the torchrun options itself (nodes, ranks, address, port), so
overrides are reported and ignored."""

from __future__ import annotations

import sys

from ._shipyard import run, split_overrides, usage_error

PROG = "determined.launch.torch_distributed"


def main(args: list[str] | None = None) -> int:
    overrides, script = split_overrides(list(sys.argv[1:] if args is None else args))
    if script[:1] == ["--trial"]:
        return usage_error(
            PROG,
            "--trial (a legacy Trial class) is not supported by this launcher: give the "
            "Trial class as the entrypoint (entrypoint: model_def:MyTrial) or a script",
        )
    if not script:
        return usage_error(
            PROG,
            "no script given: python3 -m determined.launch.torch_distributed "
            "[TORCH_OVERRIDES... --] python3 train.py",
        )
    if overrides:
        print(
            f"{PROG}: Shipyard's launcher sets torchrun's options itself (one rank per slot); "
            f"ignoring {' '.join(overrides)}",
            file=sys.stderr,
            flush=True,
        )
    from shipyard.launch import torch_distributed

    return run(torch_distributed.PROG, torch_distributed.main, script)


if __name__ == "__main__":
    sys.exit(main())
