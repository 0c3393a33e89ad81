"""``python3 -m determined.launch.wrap_rank [--no-redirect-stdio] RANK SCRIPT...``: runs the
script. Determined's prefixes each output line with the rank; Shipyard's launchers already
prefix every rank's lines ([rank=N]), so the script's output passes through unchanged."""

from __future__ import annotations

import os
import sys

from ._shipyard import usage_error

PROG = "determined.launch.wrap_rank"


def main(args: list[str] | None = None) -> int:
    rest = list(sys.argv[1:] if args is None else args)
    if rest[:1] == ["--no-redirect-stdio"]:
        rest = rest[1:]
    if rest[:1] == ["--"]:
        rest = rest[1:]
    if len(rest) < 2:
        return usage_error(PROG, "usage: python3 -m determined.launch.wrap_rank RANK SCRIPT...")
    script = rest[2:] if rest[1] == "--" else rest[1:]
    if not script:
        return usage_error(PROG, "no script given after RANK")
    try:
        os.execvp(script[0], script)
    except OSError as exc:
        return usage_error(PROG, f"cannot run {script[0]}: {exc.strerror}")
    return 0  # not reached: exec replaced this process


if __name__ == "__main__":
    sys.exit(main())
