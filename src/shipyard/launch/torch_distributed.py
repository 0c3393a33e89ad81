"""Run a PyTorch script on every slot of a trial: ``python3 -m shipyard.launch.torch_distributed
[--nproc N] [--] CMD ARGS...``.

One rank per slot of SHIPYARD_SLOT_IDS (or N CPU ranks with ``--nproc N`` outside Shipyard),
each with torch's env:// variables (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
MASTER_ADDR, MASTER_PORT), Shipyard's (SHIPYARD_RANK, SHIPYARD_SIZE, SHIPYARD_LOCAL_RANK,
SHIPYARD_LOCAL_SIZE, SHIPYARD_SLOT_IDS = the rank's one slot), CUDA_VISIBLE_DEVICES = the
rank's one GPU on GPU slots, and SHIPYARD_DIST_BACKEND (gloo on CPU, nccl on GPU) as the hint
for ``torch.distributed.init_process_group(os.environ["SHIPYARD_DIST_BACKEND"])``.
The gang (output by rank, one failure stops all) is ``_gang``'s. torch is not imported here.
"""

from __future__ import annotations

import sys

from shipyard.launch import _gang

PROG = "shipyard.launch.torch_distributed"
MASTER_ADDR = "127.0.0.1"


def rank_envs(slots: list[_gang.Slot], base: dict[str, str]) -> list[dict[str, str]]:
    size = len(slots)
    port = str(_gang.free_port())
    gpus = all(s.gpu_index is not None for s in slots)
    envs = []
    for rank, slot in enumerate(slots):
        env = dict(base)
        env.update(
            {
                "RANK": str(rank),
                "WORLD_SIZE": str(size),
                "LOCAL_RANK": str(rank),  # one machine: local and global ranks are the same
                "LOCAL_WORLD_SIZE": str(size),
                "MASTER_ADDR": MASTER_ADDR,
                "MASTER_PORT": port,
                # The rest of what torchrun sets: Lightning and Accelerate look for GROUP_RANK
                # to know an outside launcher started the processes (else they spawn their own).
                "GROUP_RANK": "0",
                "GROUP_WORLD_SIZE": "1",
                "ROLE_RANK": str(rank),
                "ROLE_WORLD_SIZE": str(size),
                "ROLE_NAME": "default",
                "SHIPYARD_RANK": str(rank),
                "SHIPYARD_SIZE": str(size),
                "SHIPYARD_LOCAL_RANK": str(rank),
                "SHIPYARD_LOCAL_SIZE": str(size),
                "SHIPYARD_SLOT_IDS": slot.id,
                "SHIPYARD_DIST_BACKEND": "nccl" if gpus else "gloo",
            }
        )
        if slot.gpu_index is not None:
            env["CUDA_VISIBLE_DEVICES"] = str(slot.gpu_index)  # pinned: one device per rank
        else:
            env.pop("CUDA_VISIBLE_DEVICES", None)
        envs.append(env)
    return envs


def main() -> int:
    return _gang.main(PROG, rank_envs)


if __name__ == "__main__":
    sys.exit(main())
