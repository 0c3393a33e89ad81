"""ctx.distributed: this process's place among the trial's processes."""

from __future__ import annotations

from typing import Any, Protocol, TypeVar

from shipyard.common.errors import InvalidRequest, NotSupportedYet
from shipyard.core._env import env_int

T = TypeVar("T")


class DistributedContext(Protocol):
    rank: int
    size: int
    local_rank: int

    @property
    def is_chief(self) -> bool: ...

    def allgather(self, obj: Any) -> list[Any]:
        """Every rank's ``obj``, in rank order."""
        ...

    def broadcast(self, obj: T) -> T:
        """The chief's ``obj`` on every rank (chief decides, workers follow)."""
        ...


class SingleProcessDistributed:
    """Rank and size from SHIPYARD_RANK/SHIPYARD_SIZE/SHIPYARD_LOCAL_RANK (default 0/1/0).
    Collectives work for one process; more come with distributed training."""

    def __init__(self) -> None:
        self.rank = env_int("SHIPYARD_RANK", 0) or 0
        self.size = env_int("SHIPYARD_SIZE", 1) or 1
        self.local_rank = env_int("SHIPYARD_LOCAL_RANK", 0) or 0
        if self.size < 1 or not 0 <= self.rank < self.size:
            raise InvalidRequest(
                f"SHIPYARD_RANK={self.rank} and SHIPYARD_SIZE={self.size} do not fit: "
                "need 0 <= rank < size"
            )

    @property
    def is_chief(self) -> bool:
        return self.rank == 0

    def allgather(self, obj: Any) -> list[Any]:
        self._single_only("allgather")
        return [obj]

    def broadcast(self, obj: T) -> T:
        self._single_only("broadcast")
        return obj

    def _single_only(self, what: str) -> None:
        if self.size > 1:
            raise NotSupportedYet(
                f"ctx.distributed.{what} with {self.size} processes is not supported yet: "
                "multi-process collectives come with distributed training"
            )
