"""``python3 -m determined.launch.deepspeed [DEEPSPEED_OVERRIDES... --] SCRIPT...``: with
DeepSpeed installed, Shipyard's torch_distributed launcher (DeepSpeed's
``init_distributed()`` reads the torchrun variables it sets); without it, a clear error."""

from __future__ import annotations

import importlib.util
import sys

from ._shipyard import run, split_overrides, usage_error

PROG = "determined.launch.deepspeed"


def main(args: list[str] | None = None) -> int:
    overrides, script = split_overrides(list(sys.argv[1:] if args is None else args))
    if importlib.util.find_spec("deepspeed") is None:
        return usage_error(
            PROG,
            "DeepSpeed is not installed in the trial's environment: install it in the image "
            "(pip install deepspeed) or use determined.launch.torch_distributed",
        )
    if script[:1] == ["--trial"]:
        return usage_error(PROG, "--trial (DeepSpeedTrial) is not supported by Shipyard yet")
    if not script:
        return usage_error(
            PROG, "no script given: python3 -m determined.launch.deepspeed python3 train.py"
        )
    if overrides:
        print(
            f"{PROG}: ignoring {' '.join(overrides)} (Shipyard starts the ranks)",
            file=sys.stderr,
            flush=True,
        )
    from shipyard.launch import torch_distributed

    return run(torch_distributed.PROG, torch_distributed.main, script)


if __name__ == "__main__":
    sys.exit(main())
