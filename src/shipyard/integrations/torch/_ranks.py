"""Where a Trainer's process stands among the trial's processes: torch.distributed joined
when a launcher started several, checked against shipyard's ctx.distributed."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class Ranks:
    world: int
    rank: int
    local_rank: int
    # Several torch ranks but one-process shipyard contexts (e.g. torchrun in local mode):
    # the chief's preempt/stop answers are broadcast with torch.
    broadcast_flags: bool
    # Several shipyard ranks: every rank takes part in storing a checkpoint.
    collective_checkpoint: bool
    created_group: bool  # this call created the process group: the Trainer destroys it

    @property
    def chief(self) -> bool:
        return self.rank == 0


def join(ctx: Any) -> Ranks:
    """Join torch.distributed when the launcher started several processes (WORLD_SIZE)."""
    created = False
    world_env = int(os.environ.get("WORLD_SIZE", "1") or 1)
    if world_env > 1 and not dist.is_initialized():
        backend = os.environ.get("SHIPYARD_DIST_BACKEND") or (
            "nccl" if torch.cuda.is_available() else "gloo"
        )
        dist.init_process_group(backend)
        created = True
    if dist.is_available() and dist.is_initialized():
        world, rank = dist.get_world_size(), dist.get_rank()
    else:
        world, rank = 1, 0
    shipyard_size = ctx.distributed.size
    if shipyard_size > 1 and (shipyard_size != world or ctx.distributed.rank != rank):
        raise ValueError(
            f"ctx.distributed (rank {ctx.distributed.rank} of {shipyard_size}) and "
            f"torch.distributed (rank {rank} of {world}) disagree: start the "
            "processes with one launcher (python3 -m shipyard.launch.torch_distributed)"
        )
    return Ranks(
        world=world,
        rank=rank,
        local_rank=int(os.environ.get("LOCAL_RANK", "0") or 0),
        broadcast_flags=world > 1 and shipyard_size == 1,
        collective_checkpoint=shipyard_size > 1,
        created_group=created,
    )
