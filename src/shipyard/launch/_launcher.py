"""The main of a launcher whose gang is one process per slot (torch_distributed): read the
command line, meet the other nodes (if any), build each rank's environment, run the gang."""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable

from shipyard.launch._exits import EXIT_USAGE
from shipyard.launch._gang import Gang
from shipyard.launch._nodes import Layout, meet_or_exit
from shipyard.launch._options import Slot, read_options
from shipyard.launch._output import Output


def main(
    prog: str, build_envs: Callable[[list[Slot], dict[str, str], Layout], list[dict[str, str]]]
) -> int:
    """``build_envs(slots, env, layout)``: each local rank's environment. Usage errors: one
    line on stderr and exit code 2."""
    env = dict(os.environ)
    read = read_options(prog, env)
    if read is None:
        return EXIT_USAGE
    options, slots, grace = read
    env.setdefault("PYTHONUNBUFFERED", "1")  # rank output reaches the log as it is written
    out = Output(sys.stdout.buffer)
    meeting = meet_or_exit(prog, out, len(slots), env)
    if isinstance(meeting, int):
        return meeting
    code = 1
    try:
        layout = meeting.layout
        assert meeting.dist_addr is not None
        env["SHIPYARD_DIST_ADDR"] = meeting.dist_addr  # ctx.distributed's collectives
        envs = build_envs(slots, env, layout)
        where = ",".join(s.id for s in slots)
        if layout.nodes > 1:
            where += f" ({layout.describe()})"
        out.say(f"starting {len(envs)} rank(s) on {where}: {shlex.join(options.command)}")
        gang = Gang(
            options.command,
            envs,
            grace,
            out,
            first_rank=layout.first_rank,
            world_size=layout.world_size,
        )
        code = gang.run()
        if code == 0:
            out.say(f"all {len(envs)} rank(s) exited with code 0")
            if layout.nodes > 1 and layout.node_rank == 0:
                out.say("waiting for the other nodes' launchers (this one hosts the coordinator)")
        return code
    finally:
        meeting.finish(code)
