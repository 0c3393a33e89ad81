"""Run a PyTorch script on every slot of a trial: ``python3 -m shipyard.launch.torch_distributed
[--nproc N] [--] CMD ARGS...``.

One rank per slot of SHIPYARD_SLOT_IDS (or N CPU ranks with ``--nproc N`` outside Shipyard),
each with torch's env:// variables (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
MASTER_ADDR, MASTER_PORT), Shipyard's (SHIPYARD_RANK, SHIPYARD_SIZE, SHIPYARD_LOCAL_RANK,
SHIPYARD_LOCAL_SIZE, SHIPYARD_SLOT_IDS = the rank's one slot), CUDA_VISIBLE_DEVICES = the
rank's one GPU on GPU slots, and SHIPYARD_DIST_BACKEND (gloo on CPU, nccl on GPU) as the hint
for ``torch.distributed.init_process_group(os.environ["SHIPYARD_DIST_BACKEND"])``.
On several nodes (SHIPYARD_NUM_NODES, see ``_nodes``) the ranks are global, MASTER_ADDR and
MASTER_PORT are the rendezvous address, GROUP_RANK/NODE_RANK the node's rank. The gang
(output by rank, one failure stops all) is ``_gang``'s. torch is not imported here.
"""

from __future__ import annotations

import sys

from shipyard.launch import _launcher
from shipyard.launch._nodes import Layout
from shipyard.launch._options import Slot

PROG = "shipyard.launch.torch_distributed"


def rank_envs(
    slots: list[Slot], base: dict[str, str], layout: Layout | None = None
) -> list[dict[str, str]]:
    """Each local rank's env; ``layout``: where this node's ranks sit among all nodes' (one
    node with a free MASTER_PORT on 127.0.0.1 when None)."""
    layout = layout or Layout.one_node(len(slots))
    local_size, size = len(slots), layout.world_size
    gpus = all(s.gpu_index is not None for s in slots)
    envs = []
    for local_rank, slot in enumerate(slots):
        rank = layout.first_rank + local_rank
        env = dict(base)
        env.update(
            {
                "RANK": str(rank),
                "WORLD_SIZE": str(size),
                "LOCAL_RANK": str(local_rank),
                "LOCAL_WORLD_SIZE": str(local_size),
                "MASTER_ADDR": layout.master_addr,
                "MASTER_PORT": str(layout.master_port),
                # The rest of what torchrun sets: Lightning and Accelerate look for GROUP_RANK
                # to know an outside launcher started the processes (else they spawn their own).
                "GROUP_RANK": str(layout.node_rank),
                "GROUP_WORLD_SIZE": str(layout.nodes),
                "ROLE_RANK": str(rank),
                "ROLE_WORLD_SIZE": str(size),
                "ROLE_NAME": "default",
                "SHIPYARD_RANK": str(rank),
                "SHIPYARD_SIZE": str(size),
                "SHIPYARD_LOCAL_RANK": str(local_rank),
                "SHIPYARD_LOCAL_SIZE": str(local_size),
                "SHIPYARD_SLOT_IDS": slot.id,
                "SHIPYARD_DIST_BACKEND": "nccl" if gpus else "gloo",
            }
        )
        if layout.nodes > 1:  # Lightning's own variable; one node keeps today's env
            env["NODE_RANK"] = str(layout.node_rank)
        if slot.gpu_index is not None:
            env["CUDA_VISIBLE_DEVICES"] = str(slot.gpu_index)  # pinned: one device per rank
        else:
            env.pop("CUDA_VISIBLE_DEVICES", None)
        envs.append(env)
    return envs


def main() -> int:
    return _launcher.main(PROG, rank_envs)


if __name__ == "__main__":
    sys.exit(main())
