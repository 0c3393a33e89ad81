"""det.core.DistributedContext on Shipyard's collectives (shipyard.core.distributed).

Shipyard's launchers start the ranks and give each its place (SHIPYARD_RANK, ...) and the
coordinator's address; every rank has one connection to it, shared by every
DistributedContext of the process and by the Context that ``det.core.init`` makes. A context
built by hand (or from torch, Horovod, DeepSpeed, TF_CONFIG) must agree with that place.

Shipyard's collectives span all ranks: the ``_local`` forms are global collectives whose
answers are filtered to this node, so every rank of every node must call them together.
"""

from __future__ import annotations

import os
from typing import Any

from shipyard.core.distributed import DistributedContext as ShipyardDistributed
from shipyard.core.distributed import make_distributed

_shared: ShipyardDistributed | None = None


def shared_distributed() -> ShipyardDistributed:
    """This process's one connection to the other ranks (made on first use)."""
    global _shared
    if _shared is None:
        _shared = make_distributed()
    return _shared


def close_shared() -> None:
    global _shared
    if _shared is not None:
        shared, _shared = _shared, None
        shared.close()


def _env_int(name: str, default: int) -> int:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"environment variable {name} must be an integer, got {text!r}") from None


class DistributedContext:
    """This rank's place among the trial's ranks, and collectives between them."""

    def __init__(
        self,
        *,
        rank: int,
        size: int,
        local_rank: int,
        local_size: int,
        cross_rank: int,
        cross_size: int,
        chief_ip: str | None = None,
        pub_port: int = 12360,
        pull_port: int = 12376,
        port_offset: int = 0,
        force_tcp: bool = False,
    ) -> None:
        # Ports and chief_ip are Determined's ZMQ wiring; Shipyard's launcher has its own.
        self.rank = rank
        self.size = size
        self.local_rank = local_rank
        self.local_size = local_size
        self.cross_rank = cross_rank
        self.cross_size = cross_size
        self._check_against_launcher()

    def _check_against_launcher(self) -> None:
        expected = (_env_int("SHIPYARD_RANK", 0), _env_int("SHIPYARD_SIZE", 1))
        if (self.rank, self.size) != expected:
            raise ValueError(
                f"DistributedContext(rank={self.rank}, size={self.size}) does not match this "
                f"process's place in the Shipyard trial (rank {expected[0]} of {expected[1]}): "
                "start the ranks with a launcher (entrypoint: python3 -m "
                "determined.launch.torch_distributed python3 train.py), and build the context "
                "with DistributedContext.from_torch_distributed()"
            )

    @classmethod
    def _from_launcher(cls) -> DistributedContext:
        rank, size = _env_int("SHIPYARD_RANK", 0), _env_int("SHIPYARD_SIZE", 1)
        local_rank = _env_int("SHIPYARD_LOCAL_RANK", rank if size > 1 else 0)
        local_size = _env_int("SHIPYARD_LOCAL_SIZE", size)
        return cls(
            rank=rank,
            size=size,
            local_rank=local_rank,
            local_size=local_size,
            cross_rank=(rank - local_rank) // max(local_size, 1),
            cross_size=max(1, size // max(local_size, 1)),
        )

    @classmethod
    def from_torch_distributed(cls, chief_ip: str | None = None) -> DistributedContext:
        """From the torchrun variables Shipyard's torch_distributed launcher sets."""
        context = cls._from_launcher()
        if "RANK" in os.environ and _env_int("RANK", 0) != context.rank:
            raise ValueError("RANK and SHIPYARD_RANK differ: start the ranks with the launcher")
        return context

    @classmethod
    def from_deepspeed(cls, chief_ip: str | None = None) -> DistributedContext:
        return cls.from_torch_distributed(chief_ip)

    @classmethod
    def from_horovod(cls, hvd: Any, chief_ip: str | None = None) -> DistributedContext:
        """Horovod's ranks must be the launcher's (horovodrun under Shipyard's mpi launcher)."""
        context = cls._from_launcher()
        if (hvd.rank(), hvd.size()) != (context.rank, context.size):
            raise ValueError(
                f"Horovod's rank {hvd.rank()} of {hvd.size()} is not this process's place in "
                f"the Shipyard trial (rank {context.rank} of {context.size})"
            )
        return context

    @classmethod
    def from_tf_config(cls) -> tuple[DistributedContext, Any]:
        """With TF_CONFIG from Shipyard's tensorflow launcher: the context and a strategy
        (MultiWorkerMirroredStrategy with several workers, else MirroredStrategy)."""
        import tensorflow as tf

        context = cls._from_launcher()
        if context.size > 1:
            return context, tf.distribute.MultiWorkerMirroredStrategy()
        return context, tf.distribute.MirroredStrategy()

    # -- Determined's accessors -------------------------------------------------------

    def get_rank(self) -> int:
        return self.rank

    def get_local_rank(self) -> int:
        return self.local_rank

    def get_size(self) -> int:
        return self.size

    def get_local_size(self) -> int:
        return self.local_size

    def get_cross_rank(self) -> int:
        return self.cross_rank

    def get_cross_size(self) -> int:
        return self.cross_size

    def get_num_agents(self) -> int:
        return self.cross_size

    # -- collectives (every rank calls each, in the same order) --------------------------

    def _dist(self) -> ShipyardDistributed:
        return shared_distributed()

    def gather(self, stuff: Any) -> list[Any] | None:
        """Every rank's ``stuff`` on the chief (None elsewhere)."""
        return self._dist().gather(stuff, 0)

    def allgather(self, stuff: Any) -> list[Any]:
        return self._dist().allgather(stuff)

    def broadcast(self, stuff: Any) -> Any:
        """The chief's ``stuff`` on every rank."""
        return self._dist().broadcast(stuff, 0)

    def _node_values(self, stuff: Any) -> list[Any]:
        everyone = self._dist().allgather((self.cross_rank, stuff))
        return [value for node, value in everyone if node == self.cross_rank]

    def gather_local(self, stuff: Any) -> list[Any] | None:
        """This node's ranks' ``stuff`` on its local chief (None elsewhere)."""
        values = self._node_values(stuff)
        return values if self.local_rank == 0 else None

    def allgather_local(self, stuff: Any) -> list[Any]:
        return self._node_values(stuff)

    def broadcast_local(self, stuff: Any = None) -> Any:
        """The local chief's ``stuff`` on every rank of its node."""
        return self._node_values(stuff)[0]

    def close(self) -> None:
        close_shared()


class DummyDistributedContext(DistributedContext):
    """One process: rank 0 of 1."""

    def __init__(self) -> None:
        super().__init__(rank=0, size=1, local_rank=0, local_size=1, cross_rank=0, cross_size=1)
