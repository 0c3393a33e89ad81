"""The pool's slots from its partition's nodes (sinfo): CPUs, or GPUs of the pool's gres; the
variables a node sets for the job itself."""

from __future__ import annotations

import re

from shipyard.backends.base import Slot, numbered_slots
from shipyard.backends.slurm.commands import SlurmCommandError, SlurmCommands
from shipyard.backends.slurm.options import SlurmOptions

# One gres of a node in sinfo's %G: "gpu:2", "gpu:a100:4", "gpu:a100:4(S:0-1)".
_GRES_ENTRY = re.compile(r"([A-Za-z0-9_.-]+)(?::([A-Za-z0-9_.-]+))?:(\d+)")
# The job's own view of the node: Slurm sets these for what it allocated, the master's
# values are of another machine. SHIPYARD_SLOT_IDS is computed on the node.
_NODE_OWNED = ("CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "ROCR_VISIBLE_DEVICES")


def node_owned(variable: str) -> bool:
    """Whether the node, not the master, sets this variable of a trial's job."""
    return (
        variable in _NODE_OWNED or variable == "SHIPYARD_SLOT_IDS" or variable.startswith("SLURM_")
    )


def slots_per_node(commands: SlurmCommands, options: SlurmOptions) -> dict[str, int]:
    """Each node of the pool's partition (the cluster's default one if none is set) and the
    slots it has. SlurmCommandError if sinfo fails or the partition has no nodes."""
    # Every partition, not just ours: a wrong name is then told which ones exist.
    out = commands.run("sinfo", "--noheader", "--Node", "--format=%N|%P|%c|%G")
    rows = [r for r in (line.split("|") for line in out.splitlines()) if len(r) == 4]
    if options.partition:
        chosen = [r for r in rows if r[1].rstrip("*") == options.partition]
        where = f"partition {options.partition!r}"
    else:
        chosen = [r for r in rows if r[1].endswith("*")]  # sinfo marks the default with *
        where = "the default partition"
    if not chosen:
        known = sorted({r[1].rstrip("*") for r in rows}) or ["none"]
        raise SlurmCommandError(
            f"Slurm has no nodes in {where} (partitions: {', '.join(known)}); "
            "set `partition` in the pool"
        )
    nodes: dict[str, int] = {}
    for node, _partition, cpus, gres in chosen:
        if options.slot_type == "cpu":
            nodes[node] = int(cpus.rstrip("+")) if cpus.rstrip("+").isdigit() else 0
        else:
            nodes[node] = gres_count(gres, options.gres)
    return nodes


def gres_count(node_gres: str, wanted: str) -> int:
    """How many of ``wanted`` ("gpu", or "gpu:a100" for one type) a node's gres has."""
    name, _, kind = wanted.partition(":")
    total = 0
    for entry in _GRES_ENTRY.finditer(node_gres):
        if entry.group(1) == name and (not kind or entry.group(2) == kind):
            total += int(entry.group(3))
    return total


def make_slots(nodes: dict[str, int], options: SlurmOptions) -> list[Slot]:
    """Slot ids count the partition's slots: "cpu0".."cpuN-1" or "gpu0"..; where a trial's
    processes run is Slurm's choice (the job learns its devices on the node)."""
    device = f"slurm:{options.partition or 'default'}"
    return numbered_slots(options.slot_type, sum(nodes.values()), device)


def nodes_for(count: int, nodes: dict[str, int]) -> int | None:
    """On how many nodes a trial of ``count`` slots runs: one if a node holds it, else the
    fewest nodes that each hold an equal share (the launchers run as many ranks per node);
    None if the partition has no such nodes."""
    sizes = sorted(nodes.values(), reverse=True)
    for k in range(1, len(sizes) + 1):
        if count % k == 0 and sizes[k - 1] >= count // k:
            return k
    return None
