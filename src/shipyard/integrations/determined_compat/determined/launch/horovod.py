"""``python3 -m determined.launch.horovod``: not in Shipyard yet (its mpi launcher is)."""

from __future__ import annotations

import sys

from ._shipyard import usage_error


def main() -> int:
    return usage_error(
        "determined.launch.horovod",
        "not supported yet by Shipyard; use python3 -m shipyard.launch.mpi horovodrun ... "
        "(docs/distributed.md)",
    )


if __name__ == "__main__":
    sys.exit(main())
