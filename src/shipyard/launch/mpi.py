"""Run an MPI (or Horovod) program on every slot of a trial: ``python3 -m shipyard.launch.mpi
[--nproc N] [--] CMD ARGS...``.

One ``mpirun`` is the gang: a hostfile in a temporary directory, ``-np N``, and each rank
started through ``shipyard.launch._mpi_rank``, which maps Open MPI's rank variables to
Shipyard's (SHIPYARD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE) and torch's (RANK, WORLD_SIZE,
LOCAL_RANK, LOCAL_WORLD_SIZE), pins CUDA_VISIBLE_DEVICES to the rank's GPU, sends its output
to this launcher (relayed as ``[rank=R] line``, as the other launchers do) and execs CMD.
SHIPYARD_DIST_ADDR is the coordinator for ``ctx.distributed``.

Several nodes (SHIPYARD_NUM_NODES, the contract in ``_nodes``): node 0's launcher runs the one
mpirun, its hostfile listing node 0 and then ``shipyard-node-K`` for each other node, with as
many slots each, so that global rank = node rank * local slots + local rank as on the other
launchers. mpirun starts Open MPI's daemon on node K through node K's launcher instead of ssh
(launch/_mpi_agent.py); that launcher gives the daemon its node's rank environment and stops
its ranks when it is stopped. Every rank's output reaches node 0's launcher.

One unit: mpirun stops every rank when one fails; node 0's launcher exits with that rank's
code, names it (from mpirun's report) and tells the master; the others exit 0 when their
daemon does. At SIGTERM/SIGINT a launcher sends SIGTERM to its node's ranks' process groups
(Open MPI gives each rank one), SIGKILL after the grace, stops mpirun (or its daemon) and
exits 143. mpirun runs in a process group of its own and gets SIGKILL when the launcher dies,
as the ranks do when mpirun (or their daemon) dies.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from shipyard.launch import _mpi_agent, _nodes
from shipyard.launch._exits import EXIT_CANNOT_START, EXIT_USAGE
from shipyard.launch._gang import StopSignals
from shipyard.launch._mpi_gang import MpiGang
from shipyard.launch._mpi_output import LOCALHOST, OutputServer
from shipyard.launch._mpi_rank import OUTPUT_ENV
from shipyard.launch._options import Slot, UsageError, read_options
from shipyard.launch._output import JOIN_S, Output

PROG = "shipyard.launch.mpi"
# Variables passed on with -x (local ranks inherit mpirun's environment anyway; -x is what
# reaches ranks on other hosts). Names only: values never appear on the command line.
_EXPORTED = (
    "PATH",
    "LD_LIBRARY_PATH",
    "PYTHONPATH",
    "PYTHONUNBUFFERED",
    "VIRTUAL_ENV",
    "MASTER_ADDR",
    "MASTER_PORT",
)
# mpirun starts the other nodes' daemons through their launchers (launch/_mpi_agent.py), one
# by one from node 0 (no tree: the agent's table is on node 0 only), and they stay attached to
# the agent's connection rather than daemonize, so each node's launcher supervises its ranks.
REMOTE_DAEMONS = [
    # Inside a Slurm (or other resource manager's) job: not its srun to start the daemons,
    # and not its allocation instead of our hostfile (whose names are ours).
    *("--mca", "plm", "rsh"),
    *("--mca", "ras", "^slurm,tm,lsf,gridengine"),
    *("--mca", "plm_rsh_agent", f"{sys.executable} -m {_mpi_agent.PROG}"),
    *("--mca", "plm_rsh_no_tree_spawn", "1"),
    *("--mca", "orte_leave_session_attached", "1"),
]


def hostfile(hosts: list[tuple[str, int]]) -> str:
    """Open MPI's hostfile for (host, slots) pairs: ``host slots=N`` a line."""
    return "".join(f"{host} slots={slots}\n" for host, slots in hosts)


def mpirun_command(
    mpirun: str,
    hostfile_path: str,
    hosts: list[tuple[str, int]],
    nproc: int,
    env: dict[str, str],
    command: list[str],
    mca: list[str] | None = None,
) -> list[str]:
    """``env``: the variables to pass on with -x (their names only)."""
    args = [mpirun, "--hostfile", hostfile_path, "-np", str(nproc), *(mca or [])]
    if os.geteuid() == 0:
        args.append("--allow-run-as-root")
    if nproc > sum(slots for _, slots in hosts):
        args.append("--oversubscribe")
    args += ["--bind-to", "none"]
    names = sorted(n for n in env if n.startswith(("SHIPYARD_", "OMPI_MCA_")) or n in _EXPORTED)
    for name in names:
        args += ["-x", name]
    return [*args, sys.executable, "-m", "shipyard.launch._mpi_rank", "--", *command]


def main() -> int:
    env = dict(os.environ)
    read = read_options(PROG, env)
    if read is None:
        return EXIT_USAGE
    options, slots, grace = read
    try:
        nodes = _nodes.from_env(env)
    except UsageError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if shutil.which("mpirun", path=env.get("PATH")) is None:
        print(
            f"{PROG}: mpirun not found on PATH: install Open MPI (Debian: apt-get install "
            "openmpi-bin libopenmpi-dev; in a Shipyard checkout: make setup)",
            file=sys.stderr,
        )
        return EXIT_CANNOT_START
    env.setdefault("PYTHONUNBUFFERED", "1")  # rank output reaches the log as it is written
    out = Output(sys.stdout.buffer)
    if nodes is None or nodes.rank == 0:
        return run_mpirun(options.command, slots, grace, env, nodes, out)
    return host_ranks(slots, grace, env, nodes, out)


def run_mpirun(
    command: list[str],
    slots: list[Slot],
    grace: float,
    env: dict[str, str],
    nodes: _nodes.Nodes | None,
    out: Output,
) -> int:
    """Node 0 (or the only node): the output server, mpirun and the verdict."""
    output = OutputServer(out, LOCALHOST if nodes is None else "")
    meeting = _nodes.meet_or_exit(PROG, out, len(slots), env, {"output_port": output.port})
    if isinstance(meeting, int):
        output.close(0)
        return meeting
    code = 1
    try:
        layout = meeting.layout
        output_host = LOCALHOST if nodes is None else nodes.host
        env = ranks_env(env, slots, layout, meeting, f"{output_host}:{output.port}")
        local = len(slots)
        hosts = [(LOCALHOST, local)] + [(remote_host(k), local) for k in range(1, layout.nodes)]
        nproc = layout.world_size
        mca: list[str] = []
        if layout.nodes > 1:
            env[_mpi_agent.AGENTS_ENV] = json.dumps(agents(layout))
            mca = REMOTE_DAEMONS
        with tempfile.TemporaryDirectory(prefix="shipyard-mpi-") as tmp:
            path = os.path.join(tmp, "hostfile")
            Path(path).write_text(hostfile(hosts))
            # By name, not by path: Open MPI takes /usr/bin/mpirun as --prefix /usr and puts
            # /usr/bin first on the ranks' PATH, ahead of the trial's venv. On several nodes
            # nothing is exported: each node's ranks get that node's environment.
            exported = env if layout.nodes == 1 else {}
            args = mpirun_command("mpirun", path, hosts, nproc, exported, command, mca)
            where = ",".join(s.id for s in slots)
            if layout.nodes > 1:
                where += f" and the same on {layout.nodes - 1} more node(s)"
            out.say(f"starting {nproc} rank(s) on {where}: {shlex.join(command)}")
            out.say(f"mpirun: {shlex.join(args)}")
            code = MpiGang(args, env, nproc, grace, out, output, local_ranks=local).run()
        if code == 0:
            out.say(f"all {nproc} rank(s) exited with code 0")
        return code
    finally:
        output.close(JOIN_S)
        meeting.finish(code)


def host_ranks(
    slots: list[Slot],
    grace: float,
    env: dict[str, str],
    nodes: _nodes.Nodes,
    out: Output,
) -> int:
    """Node 1 and up: meet, then run the Open MPI daemon node 0's mpirun sends, whose
    children are this node's ranks. Their output goes to node 0's output server."""
    host = _mpi_agent.OrtedHost(env, out)
    extra = {"agent_port": host.port, "agent_token": host.token}
    meeting = _nodes.meet_or_exit(PROG, out, len(slots), env, extra)
    if isinstance(meeting, int):
        return meeting
    code = 1
    try:
        layout = meeting.layout
        output = f"{nodes.host}:{layout.peers[0]['output_port']}"
        where = ",".join(s.id for s in slots)
        out.say(f"{layout.describe()} on {where}, started by node 0's mpirun")
        with _daemon_dirs() as dirs, StopSignals() as signals:
            host.env = {**ranks_env(env, slots, layout, meeting, output), **dirs}
            code = host.serve(signals, meeting.host_left, grace)
        return code
    finally:
        meeting.finish(code)


def ranks_env(
    env: dict[str, str],
    slots: list[Slot],
    layout: _nodes.Layout,
    meeting: _nodes.Meeting,
    output: str,
) -> dict[str, str]:
    """What a node's ranks get beside Open MPI's variables: on node 0 through mpirun's
    environment, on the others through their daemon's. Every node builds its own."""
    env = dict(env)
    env["SHIPYARD_SLOT_IDS"] = ",".join(s.id for s in slots)  # the shim picks each rank's one
    env["SHIPYARD_DIST_BACKEND"] = "nccl" if all(s.gpu_index is not None for s in slots) else "gloo"
    env["MASTER_ADDR"] = layout.master_addr  # for torch.distributed's env:// under Horovod/MPI
    env["MASTER_PORT"] = str(layout.master_port)
    assert meeting.dist_addr is not None
    env["SHIPYARD_DIST_ADDR"] = meeting.dist_addr  # ctx.distributed's collectives
    env[OUTPUT_ENV] = output
    return env


def remote_host(node_rank: int) -> str:
    """Node k's name in the hostfile: a name of ours, not the node's, so that mpirun always
    starts a daemon there through the agent (nodes may share a machine, or an address)."""
    return f"shipyard-node-{node_rank}"


def agents(layout: _nodes.Layout) -> dict[str, str]:
    """The agent's table: each remote node's launcher, as "addr:port:token"."""
    return {
        remote_host(k): f"{peer['host']}:{peer['agent_port']}:{peer['agent_token']}"
        for k, peer in enumerate(layout.peers)
        if k > 0
    }


@contextlib.contextmanager
def _daemon_dirs() -> Iterator[dict[str, str]]:
    """Open MPI's session directory and shared-memory files of this node's daemon, private:
    its names come from the host name and job id, the same as node 0's when two nodes share
    a machine (their shared-memory segments would collide)."""
    with tempfile.TemporaryDirectory(prefix="shipyard-mpi-") as tmp:
        shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
        with tempfile.TemporaryDirectory(prefix="shipyard-mpi-", dir=shm) as segments:
            yield {
                "OMPI_MCA_orte_tmpdir_base": tmp,
                "OMPI_MCA_btl_vader_backing_directory": segments,
            }


if __name__ == "__main__":
    sys.exit(main())
