"""How a gang launcher (shipyard.launch) marks the lines it relays into a trial's output, and
how the master reads them back: "[rank=R] line" for rank R's output, "[launcher] line" for
the launcher's own. Both sides import these, so the two never drift apart. No I/O."""

from __future__ import annotations

import re

LAUNCHER = "[launcher] "
RANK = "[rank={rank}] "  # RANK.format(rank=R)
# What the master accepts as a rank's prefix: group 1 is the rank.
RANK_PATTERN = re.compile(r"^\[rank=(\d{1,6})\] ")


def rank_prefix(rank: int) -> str:
    return RANK.format(rank=rank)
