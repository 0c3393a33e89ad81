"""``context.distributed``: Determined's DistributedContext calls over Shipyard's ranks."""

from __future__ import annotations

from typing import Any

import torch.distributed as dist

from shipyard.core._env import env_int


class TrialDistributed:
    """The ranks of the trial's processes (one per slot) and their collectives, which go
    through torch.distributed: the runner joins its process group before the trial is
    built."""

    def __init__(self, *, rank: int, size: int, local_rank: int) -> None:
        self.rank, self.size, self.local_rank = rank, size, local_rank
        self.local_size = env_int("LOCAL_WORLD_SIZE", size) or size
        self.cross_rank = rank // max(self.local_size, 1)
        self.cross_size = max(size // max(self.local_size, 1), 1)

    def get_rank(self) -> int:
        return self.rank

    def get_size(self) -> int:
        return self.size

    def get_local_rank(self) -> int:
        return self.local_rank

    def get_local_size(self) -> int:
        return self.local_size

    def get_cross_rank(self) -> int:
        return self.cross_rank

    def get_cross_size(self) -> int:
        return self.cross_size

    def allgather(self, stuff: Any) -> list[Any]:
        if self.size == 1:
            return [stuff]
        out: list[Any] = [None] * self.size
        dist.all_gather_object(out, stuff)
        return out

    def gather(self, stuff: Any) -> list[Any] | None:
        if self.size == 1:
            return [stuff]
        out: list[Any] | None = [None] * self.size if self.rank == 0 else None
        dist.gather_object(stuff, out, dst=0)
        return out

    def broadcast(self, stuff: Any) -> Any:
        if self.size == 1:
            return stuff
        box = [stuff if self.rank == 0 else None]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def allgather_local(self, stuff: Any) -> list[Any]:
        if self.local_size == self.size:
            return self.allgather(stuff)
        return [
            x
            for i, x in enumerate(self.allgather(stuff))
            if i // self.local_size == self.cross_rank
        ]

    def gather_local(self, stuff: Any) -> list[Any] | None:
        gathered = self.allgather_local(stuff)
        return gathered if self.local_rank == 0 else None

    def broadcast_local(self, stuff: Any) -> Any:
        return self.allgather_local(stuff)[0]
