"""``python3 -m determined.launch.tensorflow [--port PORT] [--] SCRIPT...``: Shipyard's
tensorflow launcher (TF_CONFIG for MultiWorkerMirroredStrategy, one worker per slot).
Shipyard picks the workers' ports, so --port is ignored."""

from __future__ import annotations

import sys

from ._shipyard import run, usage_error

PROG = "determined.launch.tensorflow"


def main(args: list[str] | None = None) -> int:
    rest = list(sys.argv[1:] if args is None else args)
    if rest[:1] == ["--port"] and len(rest) > 1:
        rest = rest[2:]
    elif rest[:1] and rest[0].startswith("--port="):
        rest = rest[1:]
    if rest[:1] == ["--"]:
        rest = rest[1:]
    if not rest:
        return usage_error(
            PROG,
            "no script given: python3 -m determined.launch.tensorflow "
            "[--port PORT] [--] python3 train.py",
        )
    from shipyard.launch import tensorflow

    return run(tensorflow.PROG, tensorflow.main, rest)


if __name__ == "__main__":
    sys.exit(main())
