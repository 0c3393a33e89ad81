"""ctx.distributed: this process's place among the trial's processes, and collectives.

With one process (SHIPYARD_SIZE unset or 1) the collectives are local and free. With more,
the launcher starts a coordinator and gives every rank its address (SHIPYARD_DIST_ADDR); each
collective is one round trip to it. Objects travel pickled: keep them small (flags, numbers,
uuids, a few MB at most), and run ranks only among processes of the same user on one
machine or a trusted network (unpickling runs code).

Every rank must call the same collectives in the same order: collective #12 on one rank is
matched with collective #12 on every other. A rank that does not get there within
SHIPYARD_DIST_TIMEOUT_S (300 s) fails it on every rank.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from shipyard.common.errors import InvalidRequest
from shipyard.core._env import env_int, env_str

if TYPE_CHECKING:
    from shipyard.core._collective import CollectiveClient

T = TypeVar("T")

DEFAULT_TIMEOUT_S = 300.0


class DistributedContext(Protocol):
    rank: int
    size: int
    local_rank: int
    local_size: int

    @property
    def is_chief(self) -> bool: ...

    def allgather(self, obj: Any) -> list[Any]:
        """Every rank's ``obj``, in rank order."""
        ...

    def broadcast(self, obj: T, root: int = 0) -> T:
        """The ``root`` rank's ``obj`` on every rank (chief decides, workers follow)."""
        ...

    def gather(self, obj: Any, root: int = 0) -> list[Any] | None:
        """Every rank's ``obj`` in rank order on ``root``; None on the other ranks."""
        ...

    def barrier(self) -> None:
        """Return once every rank has called it."""
        ...

    def close(self) -> None: ...


def _env_ranks() -> tuple[int, int, int, int]:
    rank = env_int("SHIPYARD_RANK", 0) or 0
    size = env_int("SHIPYARD_SIZE", 1) or 1
    local_rank = env_int("SHIPYARD_LOCAL_RANK", rank if size > 1 else 0) or 0
    local_size = env_int("SHIPYARD_LOCAL_SIZE", size) or size
    if size < 1 or not 0 <= rank < size:
        raise InvalidRequest(
            f"SHIPYARD_RANK={rank} and SHIPYARD_SIZE={size} do not fit: need 0 <= rank < size"
        )
    if not 0 <= local_rank < local_size:
        raise InvalidRequest(
            f"SHIPYARD_LOCAL_RANK={local_rank} and SHIPYARD_LOCAL_SIZE={local_size} do not "
            "fit: need 0 <= local_rank < local_size"
        )
    return rank, size, local_rank, local_size


def make_distributed() -> DistributedContext:
    """SingleProcessDistributed for one rank, MultiProcessDistributed (connected to the
    launcher's coordinator) for more."""
    rank, size, local_rank, local_size = _env_ranks()
    if size == 1:
        return SingleProcessDistributed()
    addr = env_str("SHIPYARD_DIST_ADDR")
    if addr is None:
        raise InvalidRequest(
            f"SHIPYARD_SIZE={size} but SHIPYARD_DIST_ADDR is not set: a trial with several "
            "ranks must be started by a Shipyard launcher (shipyard.launch), which starts "
            "the coordinator the ranks talk through and sets its address"
        )
    timeout_s = _timeout_from_env()
    return MultiProcessDistributed(rank, size, local_rank, local_size, addr, timeout_s)


def _timeout_from_env() -> float:
    text = env_str("SHIPYARD_DIST_TIMEOUT_S")
    if text is None:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise InvalidRequest(f"SHIPYARD_DIST_TIMEOUT_S must be a number > 0, got {text!r}")
    return value


class SingleProcessDistributed:
    """One process: rank 0 of 1; every collective returns at once."""

    def __init__(self) -> None:
        self.rank = 0
        self.size = 1
        self.local_rank = 0
        self.local_size = 1

    @property
    def is_chief(self) -> bool:
        return True

    def allgather(self, obj: Any) -> list[Any]:
        return [obj]

    def broadcast(self, obj: T, root: int = 0) -> T:
        _check_root(root, 1)
        return obj

    def gather(self, obj: Any, root: int = 0) -> list[Any] | None:
        _check_root(root, 1)
        return [obj]

    def barrier(self) -> None:
        return None

    def close(self) -> None:
        return None


class MultiProcessDistributed:
    """One of several ranks; collectives go through the launcher's coordinator (connected
    when the context is made). Call collectives from one thread."""

    def __init__(
        self,
        rank: int,
        size: int,
        local_rank: int,
        local_size: int,
        addr: str,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        from shipyard.core._collective import CollectiveClient

        self.rank = rank
        self.size = size
        self.local_rank = local_rank
        self.local_size = local_size
        self._client: CollectiveClient = CollectiveClient(addr, rank, size, timeout_s)

    @property
    def is_chief(self) -> bool:
        return self.rank == 0

    def allgather(self, obj: Any) -> list[Any]:
        return self._client.call_objects("allgather", obj)

    def broadcast(self, obj: T, root: int = 0) -> T:
        _check_root(root, self.size)
        (value,) = self._client.call_objects(f"broadcast/{root}", obj, send=self.rank == root)
        result: T = value
        return result

    def gather(self, obj: Any, root: int = 0) -> list[Any] | None:
        _check_root(root, self.size)
        values = self._client.call_objects(f"gather/{root}", obj)
        return values if self.rank == root else None

    def barrier(self) -> None:
        self._client.call("barrier", b"")

    def close(self) -> None:
        self._client.close()


def _check_root(root: int, size: int) -> None:
    if isinstance(root, bool) or not isinstance(root, int) or not 0 <= root < size:
        raise ValueError(f"root must be a rank (0 <= root < {size}), got {root!r}")
