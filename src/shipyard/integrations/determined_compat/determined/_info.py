"""det.get_cluster_info(): who this trial is, from the trial's SHIPYARD_* environment."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from shipyard.core._env import env_str

from ._errors import not_supported


def _env(name: str) -> str:
    return env_str(name) or ""


def _int(name: str, default: int = 0) -> int:
    text = _env(name)
    try:
        return int(text) if text else default
    except ValueError:
        raise ValueError(f"environment variable {name} must be an integer, got {text!r}") from None


class TrialInfo:
    """The trial: its ids, seed, hyperparameters and (read on first use) experiment config."""

    def __init__(self) -> None:
        import shipyard.core.info as info

        self._info = info.info_from_env(master=_env("SHIPYARD_MASTER") or None)
        self.trial_id: int = self._info.trial_id or 0
        self.experiment_id: int = self._info.experiment_id or 0
        self.trial_seed: int = self._info.trial_seed
        self.hparams: dict[str, Any] = self._info.hparams
        self._trial_run_id = self._info.run_id

    @property
    def _config(self) -> dict[str, Any]:
        return self._info.experiment_config


class RendezvousInfo:
    """The trial's nodes ("containers" in Determined): their addresses and this one's rank."""

    def __init__(self) -> None:
        self.container_rank = _int("SHIPYARD_NODE_RANK")
        nodes = max(1, _int("SHIPYARD_NUM_NODES", 1))
        host = _env("SHIPYARD_RENDEZVOUS_ADDR").rpartition(":")[0] or "127.0.0.1"
        self.container_addrs = _NodeAddrs(host, nodes)
        slots = len(_slot_ids())
        self.container_slot_counts = [slots] * nodes


class _NodeAddrs(list):  # type: ignore[type-arg]
    """Node 0's address (where DistributedContext's chief_ip points); the other nodes'
    addresses are known only to Shipyard's launchers, so reading one raises: by index, by
    slice, or by iterating (``for``, ``list()``) past node 0. ``len()`` is the node count."""

    def __init__(self, host: str, nodes: int) -> None:
        super().__init__([host] * nodes)
        self._nodes = nodes

    def _refuse(self) -> NotImplementedError:
        return not_supported("the address of a node other than node 0 (container_addrs[i])")

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            if any(i != 0 for i in range(len(self))[index]):
                raise self._refuse()
        elif isinstance(index, int) and index % max(self._nodes, 1) != 0:
            raise self._refuse()
        return super().__getitem__(index)

    def __iter__(self) -> Iterator[str]:
        for i in range(len(self)):
            yield self[i]

    def __reversed__(self) -> Iterator[str]:
        for i in reversed(range(len(self))):
            yield self[i]

    def __repr__(self) -> str:
        others = f", <{self._nodes - 1} more: not supported>" if self._nodes > 1 else ""
        return f"[{super().__getitem__(0)!r}{others}]"


class ResourcesInfo:
    @property
    def gpu_uuids(self) -> list[str]:
        raise not_supported("ClusterInfo.gpu_uuids", "read CUDA_VISIBLE_DEVICES")


def _slot_ids() -> list[int]:
    """Shipyard names slots "cpu0", "gpu3"; Determined gives their numbers."""
    ids = []
    for name in _env("SHIPYARD_SLOT_IDS").split(","):
        digits = name.strip().removeprefix("cpu").removeprefix("gpu")
        if digits.isdigit():
            ids.append(int(digits))
    return ids


class ClusterInfo:
    """What Determined's ClusterInfo tells a trial, from Shipyard's trial environment."""

    task_type = "TRIAL"

    def __init__(self) -> None:
        self.master_url = _env("SHIPYARD_MASTER")
        self.cluster_id = "shipyard"
        self.agent_id = _env("HOSTNAME") or "localhost"
        self.task_id = f"trial-{_env('SHIPYARD_TRIAL_ID')}"
        self.allocation_id = f"{self.task_id}.run-{_env('SHIPYARD_RUN_ID') or '1'}"
        self.master_cert_file = _env("SHIPYARD_CA_CERT") or None
        self.slot_ids = _slot_ids()
        self._trial = TrialInfo()
        self._rendezvous = RendezvousInfo()

    @property
    def session_token(self) -> str:
        raise not_supported(
            "ClusterInfo.session_token", "a trial's task token reaches only its own trial"
        )

    @property
    def trial(self) -> TrialInfo:
        return self._trial

    @property
    def latest_checkpoint(self) -> str | None:
        """The checkpoint to resume from (None on a trial's first run)."""
        return self._trial._info.latest_checkpoint

    @property
    def user_data(self) -> dict[str, Any]:
        """The ``data`` field of the experiment config."""
        data = self._trial._config.get("data")
        return data if isinstance(data, dict) else {}

    @property
    def container_addrs(self) -> list[str]:
        return self._rendezvous.container_addrs

    @property
    def container_rank(self) -> int:
        return self._rendezvous.container_rank

    @property
    def container_slot_counts(self) -> list[int]:
        return self._rendezvous.container_slot_counts

    @property
    def gpu_uuids(self) -> list[str]:
        return ResourcesInfo().gpu_uuids


_cached: ClusterInfo | None = None


def get_cluster_info() -> ClusterInfo | None:
    """This trial's ClusterInfo, or None when not running in a Shipyard trial."""
    global _cached
    if not _env("SHIPYARD_TRIAL_ID"):
        return None
    if _cached is None:
        _cached = ClusterInfo()
    return _cached
