"""Run a TensorFlow script on every slot of a trial with its TF_CONFIG: ``python3 -m
shipyard.launch.tensorflow [--ps K] [--nproc N] [--] CMD ARGS...``.

Every process gets ``TF_CONFIG`` as TensorFlow documents it (guide "Distributed training",
section "Setting up the TF_CONFIG environment variable"; the tutorials "Multi-worker training
with Keras" and "Parameter server training with ParameterServerStrategy")::

    {"cluster": {"worker": ["127.0.0.1:PORT", ...]}, "task": {"type": "worker", "index": I}}

with one free port per process on 127.0.0.1 (one machine) and the same "cluster" everywhere.
On several nodes (SHIPYARD_NUM_NODES, see ``_nodes``) the workers of every node are listed,
each at its node's address, in global rank order, and worker I is global rank I. With
``--ps`` the chief and the ps run on node 0 (listed at its address) and every node runs its
workers; the other nodes' workers are stopped when node 0's launcher ends (after its chief
exited 0, or failed), and node 0 does not wait for them.

- Default, for ``MultiWorkerMirroredStrategy``: N processes, one per slot of
  SHIPYARD_SLOT_IDS (or N CPU slots with ``--nproc N`` outside Shipyard), all of type
  "worker", index = rank. There is no "chief" entry: TensorFlow's documented MWMS
  TF_CONFIG lists workers only, and "the worker with index 0 is appointed as the chief
  worker" (that is how tf.distribute implements it), so worker 0 is TensorFlow's chief
  and Shipyard's rank 0 alike. Worker I is rank I of N of ``ctx.distributed``
  (SHIPYARD_RANK, SHIPYARD_SIZE, SHIPYARD_LOCAL_RANK, SHIPYARD_LOCAL_SIZE,
  SHIPYARD_DIST_ADDR).
- ``--ps K`` (K >= 1), for ``ParameterServerStrategy``: the documented cluster of one
  coordinator of type "chief", the workers and the parameter servers,
  ``{"chief": [1 address], "worker": [N], "ps": [K]}``, so N + K + 1 processes: worker I on
  slot I (the workers do the computing), the chief and the K ps on CPU with no slot. All run
  the same command; the script branches on the task type as TensorFlow's tutorial does
  ("worker"/"ps": start a ``tf.distribute.Server`` and ``join()``; "chief": run the
  training). The chief is the only rank of ``ctx.distributed`` (rank 0 of 1) and the
  process that reports to the master. The workers and ps are not ranks: workers serving in
  ``server.join()`` never reach a collective, so counting them would hang the chief's first
  one. They get no SHIPYARD_RANK/SIZE/LOCAL_*/DIST_ADDR and no SHIPYARD_MASTER, so a
  ``shipyard.core.init()`` there is a local rank 0 of 1 and never a second reporter. The
  gang ends when the chief exits 0: the servers still running get SIGTERM and the launcher
  exits 0. GRPC_FAIL_FAST defaults to "use_caller", which TensorFlow's tutorial says every
  task needs for fault tolerance.

CUDA_VISIBLE_DEVICES: a worker on a GPU slot sees its one GPU; every other process (a CPU
slot, the chief, a ps) gets "" so that TensorFlow, which takes every visible GPU at start,
takes none. Output is relayed by process as ``[rank=R] line`` (R is the process's place in
the gang: with ``--ps``, 0 is the chief, 1..N the workers, N+1..N+K the ps), and one
failure stops all: the gang is ``_gang``'s. TensorFlow is not imported here.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass

from shipyard.common.ports import free_ports
from shipyard.launch import _nodes
from shipyard.launch._exits import EXIT_USAGE
from shipyard.launch._gang import Gang
from shipyard.launch._nodes import Layout
from shipyard.launch._options import Slot, UsageError, grace_s, parse_args, slots_for, usage
from shipyard.launch._output import Output

PROG = "shipyard.launch.tensorflow"
HOST = "127.0.0.1"
USAGE = (
    f"usage: python3 -m {PROG} [--ps K] [--nproc N] [--] CMD ARGS... (inside Shipyard one "
    "worker runs per slot of the trial; --nproc N runs N CPU workers locally, without a "
    "master; --ps K adds K parameter servers and a chief for ParameterServerStrategy)"
)
_RANK_VARS = ("SHIPYARD_RANK", "SHIPYARD_SIZE", "SHIPYARD_LOCAL_RANK", "SHIPYARD_LOCAL_SIZE")


@dataclass(frozen=True)
class Task:
    type: str  # "chief", "worker" or "ps", as in TF_CONFIG
    index: int
    slot: Slot | None  # a worker's slot; the chief and the ps have none


def split_ps(args: list[str]) -> tuple[int, list[str]]:
    """Take ``--ps K`` out of the launcher's options (before ``--`` or the command);
    the rest is for ``_options.parse_args``."""
    ps = 0
    kept: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            break
        if arg == "--nproc":
            kept += args[i : i + 2]
            i += 2
            continue
        if arg.startswith("--nproc="):
            kept.append(arg)
            i += 1
            continue
        if arg == "--ps" or arg.startswith("--ps="):
            if arg == "--ps":
                if i + 1 >= len(args):
                    raise UsageError("--ps needs a number of parameter servers, like --ps 1")
                value, i = args[i + 1], i + 2
            else:
                value, i = arg.split("=", 1)[1], i + 1
            if not value.isdigit():
                raise UsageError(
                    f"--ps takes a number of parameter servers of 0 or more, got {value!r}"
                )
            ps = int(value)
            continue
        break
    return ps, kept + args[i:]


def tasks_for(slots: list[Slot], ps: int, first: int = 0, servers: bool = True) -> list[Task]:
    """The gang in order: workers only; or with ps, the chief, the workers, the ps.
    ``first``: the index of this node's first worker (its first global rank); ``servers``:
    whether the chief and the ps run here (node 0 only)."""
    workers = [Task("worker", i, slot) for i, slot in enumerate(slots, start=first)]
    if ps == 0 or not servers:
        return workers
    return [Task("chief", 0, None), *workers, *(Task("ps", j, None) for j in range(ps))]


def labels_of(tasks: list[Task], ps: int, workers: int) -> list[int]:
    """Each process's ``[rank=R]``: the worker index without ps; with ps the chief is 0, worker
    I is 1 + I and ps J is 1 + workers + J (every node's processes numbered apart)."""
    if ps == 0:
        return [t.index for t in tasks]
    first = {"chief": 0, "worker": 1, "ps": 1 + workers}
    return [first[t.type] + t.index for t in tasks]


def cluster_of(tasks: list[Task], ports: list[int]) -> dict[str, list[str]]:
    cluster: dict[str, list[str]] = {}
    for task, port in zip(tasks, ports, strict=True):
        cluster.setdefault(task.type, []).append(f"{HOST}:{port}")  # tasks are in index order
    return cluster


def nodes_cluster(layout: Layout, ps: int) -> dict[str, list[str]]:
    """Every node's workers, in node order: the global ranks are the worker indexes. With ps,
    the chief and the ps run on node 0."""

    def at(peer: dict, port: int) -> str:
        host = f"[{peer['host']}]" if ":" in peer["host"] else peer["host"]  # an IPv6 address
        return f"{host}:{port}"

    workers = [at(peer, port) for peer in layout.peers for port in peer["ports"]]
    if ps == 0:
        return {"worker": workers}
    node0 = layout.peers[0]
    return {
        "chief": [at(node0, node0["chief_port"])],
        "worker": workers,
        "ps": [at(node0, port) for port in node0["ps_ports"]],
    }


def meeting_ports(nodes: _nodes.Nodes | None, local: int, ps: int) -> dict | None:
    """What the other nodes learn of this one at the meeting: its workers' ports, and on
    node 0 with ps the chief's and the ps' ports."""
    if nodes is None:
        return None
    servers = ps if nodes.rank == 0 and ps else -1
    ports = free_ports(local + 1 + servers, "")
    extra: dict = {"ports": ports[:local]}
    if servers >= 0:
        extra.update(chief_port=ports[local], ps_ports=ports[local + 1 :])
    return extra


def process_envs(
    slots: list[Slot],
    ps: int,
    base: dict[str, str],
    dist_addr: str | None,
    layout: Layout | None = None,
) -> tuple[list[Task], list[dict[str, str]]]:
    layout = layout or Layout.one_node(len(slots))
    tasks = tasks_for(slots, ps, layout.first_rank, servers=layout.node_rank == 0)
    if layout.nodes > 1:
        cluster = nodes_cluster(layout, ps)
    else:
        cluster = cluster_of(tasks, free_ports(len(tasks), HOST))
    envs = []
    for task in tasks:
        env = dict(base)
        config = {"cluster": cluster, "task": {"type": task.type, "index": task.index}}
        env["TF_CONFIG"] = json.dumps(config)
        for name in (*_RANK_VARS, "SHIPYARD_DIST_ADDR", "SHIPYARD_SLOT_IDS"):
            env.pop(name, None)
        if ps == 0:  # every worker is a rank of ctx.distributed, numbered globally
            local = task.index - layout.first_rank
            ranks = {"RANK": task.index, "SIZE": layout.world_size, "LOCAL_RANK": local}
            env.update({f"SHIPYARD_{k}": str(v) for k, v in ranks.items()})
            env["SHIPYARD_LOCAL_SIZE"] = str(len(slots))
            if dist_addr is not None:
                env["SHIPYARD_DIST_ADDR"] = dist_addr
        else:
            env.setdefault("GRPC_FAIL_FAST", "use_caller")
            if task.type == "chief":  # the only rank: it alone reports to the master
                env.update(dict(zip(_RANK_VARS, ("0", "1", "0", "1"), strict=True)))
            else:
                env.pop("SHIPYARD_MASTER", None)
        if task.slot is not None:
            env["SHIPYARD_SLOT_IDS"] = task.slot.id
        gpu = task.slot.gpu_index if task.slot is not None else None
        env["CUDA_VISIBLE_DEVICES"] = "" if gpu is None else str(gpu)  # "": no GPU at all
        envs.append(env)
    return tasks, envs


def describe(task: Task, ps: int, size: int) -> str:
    where = f" on {task.slot.id}" if task.slot is not None else ""
    if ps == 0:
        return f"worker {task.index}{where} (rank {task.index} of {size})"
    if task.type == "chief":
        return "chief 0 (rank 0 of 1, reports to the master)"
    return f"{task.type} {task.index}{where}"


def main() -> int:
    env = dict(os.environ)
    try:
        ps, rest = split_ps(sys.argv[1:])
        options = parse_args(rest, PROG)
        slots = slots_for(options, PROG, env)
        grace = grace_s(env)
        nodes = _nodes.from_env(env)
    except UsageError as exc:
        print(f"{PROG}: {str(exc).replace(usage(PROG), USAGE)}", file=sys.stderr)
        return EXIT_USAGE
    env.setdefault("PYTHONUNBUFFERED", "1")  # output reaches the log as it is written
    out = Output(sys.stdout.buffer)
    # ctx.distributed's coordinator only when the workers are the ranks (not with --ps).
    extra = meeting_ports(nodes, len(slots), ps)
    meeting = _nodes.meet_or_exit(PROG, out, len(slots), env, extra, coordinator=ps == 0)
    if isinstance(meeting, int):
        return meeting
    code = 1
    try:
        layout = meeting.layout
        tasks, envs = process_envs(slots, ps, env, meeting.dist_addr, layout)
        out.say(f"starting {len(envs)} process(es): {shlex.join(options.command)}")
        size = layout.world_size
        ranks = labels_of(tasks, ps, size)
        described = (
            f"rank={r}: {describe(t, ps, size)}" for r, t in zip(ranks, tasks, strict=True)
        )
        out.say(", ".join(described))
        chief = ps > 0 and layout.node_rank == 0
        gang = Gang(
            options.command,
            envs,
            grace,
            out,
            ends_with=0 if chief else None,
            ends_when=_chief_node_ended(meeting) if ps and not chief else None,
            world_size=size if ps == 0 else None,
            ranks=ranks,
        )
        code = gang.run()
        if code == 0:
            out.say("the chief exited with code 0" if chief else "all workers exited with code 0")
        return code
    finally:
        # With ps the other nodes' workers serve until node 0 leaves: it does not wait.
        meeting.finish(code, wait_s=0 if ps and meeting.layout.nodes > 1 else None)


def _chief_node_ended(meeting: _nodes.Meeting) -> Callable[[], str | None]:
    def ended() -> str | None:
        return "node 0's launcher (the chief's) ended" if meeting.host_left() else None

    return ended


if __name__ == "__main__":
    sys.exit(main())
