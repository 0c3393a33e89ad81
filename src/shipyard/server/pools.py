"""Resource pools: named groups of the backend's slots, each with its own scheduler settings.

Configured in the master's config file (`--config master.yaml`), in Determined's shape:

    resource_pools:
      - pool_name: default
        slots: 2                 # Shipyard: a count, or a list of slot ids ("gpu0", "cpu1")
        scheduler: {type: priority, preemption: true}
      - pool_name: batch         # no `slots`: every slot no other pool took
    default_compute_pool: default

With no file, one pool named "default" holds every slot, without preemption (Determined's
default for its priority scheduler).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    model_validator,
)

from shipyard.backends.base import Backend, OnTheMastersMachine, Slot
from shipyard.backends.local.backend import LocalBackend
from shipyard.backends.local.options import ContainersConfig
from shipyard.backends.options import BackendOptions
from shipyard.backends.pooled import LOCAL, PooledBackend
from shipyard.backends.registry import backend_class, check_type, make_backend, options_models
from shipyard.common.config.resources import DEFAULT_POOL
from shipyard.common.errors import ConfigError


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SchedulerConfig(_Strict):
    # priority: smaller resources.priority first, fair share among equals.
    # fair_share: priorities are ignored; slots are shared by resources.weight only.
    type: Literal["priority", "fair_share"] = "priority"
    # A waiting trial of better priority takes slots from running trials of worse priority
    # (they checkpoint and requeue; killed after their experiment's preemption_timeout).
    preemption: bool = False
    default_priority: int | None = Field(default=None, ge=1, le=99)  # accepted, unused

    @model_validator(mode="after")
    def _preemption_needs_priorities(self) -> SchedulerConfig:
        if self.preemption and self.type == "fair_share":
            raise ValueError("preemption needs the priority scheduler (type: priority)")
        return self


class PoolBase(_Strict):
    pool_name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")
    description: str = ""
    # local pools: a count or a list of the machine's slot ids; other pools: at most this many
    # of the engine's slots (a count; default: all of them).
    slots: int | list[str] | None = None
    scheduler: SchedulerConfig = Field(default_factory=SchedulerConfig)
    # `type` (the backend) and the backend's own keys come from backends/*/options.py.
    if TYPE_CHECKING:
        type: str


def _pool_models() -> dict[str, type[PoolConfig]]:
    """A pool model per backend type: the common keys plus that backend's own."""
    return {
        name: type(f"{name.title()}PoolConfig", (PoolBase, options), {"__module__": __name__})
        for name, options in options_models().items()
    }


POOL_MODELS = _pool_models()
LocalPoolConfig = POOL_MODELS["local"]


def _pool_type(value: Any) -> str:
    if isinstance(value, dict):
        return str(value.get("type", "local"))
    return str(getattr(value, "type", "local"))


def _known_type(value: Any) -> Any:
    try:
        check_type(_pool_type(value))
    except ConfigError as exc:
        raise ValueError(f"type: {exc.message}") from None
    return value


if TYPE_CHECKING:

    class PoolConfig(PoolBase, BackendOptions):
        """What a type checker sees of every pool model: the union below is built at run
        time from the backends' options."""

else:
    PoolConfig = Annotated[
        Union[tuple(Annotated[model, Tag(name)] for name, model in POOL_MODELS.items())],  # noqa: UP007
        Discriminator(_pool_type),
        BeforeValidator(_known_type),
    ]


class MasterConfig(_Strict):
    resource_pools: list[PoolConfig] = Field(
        default_factory=lambda: [LocalPoolConfig(pool_name=DEFAULT_POOL, type="local")],
        min_length=1,
    )
    default_compute_pool: str | None = None
    # How local pools run trials with an environment.image (docs/backends/containers.md).
    containers: ContainersConfig = Field(default_factory=ContainersConfig)

    @model_validator(mode="after")
    def _names(self) -> MasterConfig:
        names = [p.pool_name for p in self.resource_pools]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"pool names must be unique; repeated: {', '.join(duplicates)}")
        if self.default_compute_pool is not None and self.default_compute_pool not in names:
            raise ValueError(
                f"default_compute_pool {self.default_compute_pool!r} is not one of the "
                f"resource_pools ({', '.join(names)})"
            )
        return self

    @property
    def default_pool(self) -> str:
        return self.default_compute_pool or self.resource_pools[0].pool_name


def load_master_config(path: Path) -> MasterConfig:
    """Read the master's config file; a problem names the file and the field."""
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read the master config {path}: {exc}") from exc
    try:
        return MasterConfig.model_validate(data)
    except ValidationError as exc:
        details = [
            {"path": _field_path(err["loc"]) or "<config>", "message": err["msg"]}
            for err in exc.errors()
        ]
        raise ConfigError(f"the master config {path} is not valid", details) from exc


def _field_path(loc: tuple) -> str:
    """The path in the file: without the pool type pydantic inserts after a pool's index."""
    parts = [
        str(p)
        for i, p in enumerate(loc)
        if not (i > 0 and isinstance(loc[i - 1], int) and p in POOL_MODELS)
    ]
    return ".".join(parts)


@dataclass(frozen=True)
class Pool:
    name: str
    slots: tuple[Slot, ...]
    scheduler: str  # "priority" or "fair_share"
    preemption: bool
    type: str = "local"  # the backend
    description: str = ""
    shares_files: bool = True  # its nodes see the master's disk (shares_masters_files)

    @property
    def slot_ids(self) -> frozenset[str]:
        return frozenset(s.id for s in self.slots)


def on_the_masters_machine(pool: PoolBase | Pool) -> bool:
    """A pool whose backend runs on the master's machine: such pools split that machine's
    slots and share one backend (LOCAL); any other pool has an engine of its own."""
    return issubclass(backend_class(pool.type), OnTheMastersMachine)


def partition(
    capacity: list[Slot], config: MasterConfig, engines: Mapping[str, list[Slot]] | None = None
) -> dict[str, Pool]:
    """Give each pool its slots. Local pools share the machine's ``capacity`` in its order: a
    count takes the next ones, a list names them, and the one local pool without `slots`
    takes what is left. Any other pool has its own engine's slots (``engines[pool name]``),
    all of them or the first `slots`."""
    local = [p for p in config.resource_pools if on_the_masters_machine(p)]
    index = {p.pool_name: i for i, p in enumerate(config.resource_pools)}
    by_id = {s.id: s for s in capacity}
    taken: set[str] = set()
    chosen: dict[str, list[Slot]] = {}
    problems: list[dict] = []
    for pool in local:
        where = f"resource_pools.{index[pool.pool_name]}.slots"
        if isinstance(pool.slots, list):
            unknown = [sid for sid in pool.slots if sid not in by_id or sid in taken]
            if unknown:
                problems.append(
                    {
                        "path": where,
                        "message": f"unknown or already taken slots: {', '.join(unknown)}; "
                        f"this machine has {', '.join(by_id)}",
                    }
                )
                continue
            chosen[pool.pool_name] = [by_id[sid] for sid in pool.slots]
            taken.update(pool.slots)
    for pool in local:
        if isinstance(pool.slots, int):
            rest = [s for s in capacity if s.id not in taken]
            if pool.slots > len(rest):
                problems.append(
                    {
                        "path": f"resource_pools.{index[pool.pool_name]}.slots",
                        "message": f"{pool.slots} slots asked, {len(rest)} left of {len(capacity)}",
                    }
                )
                continue
            chosen[pool.pool_name] = rest[: pool.slots]
            taken.update(s.id for s in rest[: pool.slots])
    open_ended = [p for p in local if p.slots is None]
    if len(open_ended) > 1:
        problems.append(
            {
                "path": "resource_pools",
                "message": "only one local pool may leave out `slots` (it takes the rest)",
            }
        )
    for pool in open_ended[:1]:
        chosen[pool.pool_name] = [s for s in capacity if s.id not in taken]
    for pool in config.resource_pools:
        if on_the_masters_machine(pool):
            continue
        if isinstance(pool.slots, list):
            problems.append(
                {
                    "path": f"resource_pools.{index[pool.pool_name]}.slots",
                    "message": f"a {pool.type} pool takes a count of slots, not a list",
                }
            )
            continue
        found = list((engines or {}).get(pool.pool_name, []))
        chosen[pool.pool_name] = found if pool.slots is None else found[: pool.slots]
    if problems:
        raise ConfigError("the resource pools do not fit this machine's slots", problems)
    return {
        p.pool_name: Pool(
            name=p.pool_name,
            slots=tuple(chosen[p.pool_name]),
            scheduler=p.scheduler.type,
            preemption=p.scheduler.preemption,
            type=p.type,
            description=p.description,
            shares_files=p.shares_masters_files(),
        )
        for p in config.resource_pools
    }


def make_backends(config: MasterConfig, local_slots: int | None) -> PooledBackend:
    """One backend per pool that is not local, and one local backend the local pools share
    (``local_slots``: the master's --slots)."""
    backends: dict[str, Backend] = {}
    expected = {}
    if any(on_the_masters_machine(p) for p in config.resource_pools):
        backends[LOCAL] = LocalBackend(slots=local_slots, containers=config.containers)
    for pool in config.resource_pools:
        if not on_the_masters_machine(pool):
            backends[pool.pool_name] = make_backend(pool, pool=pool.pool_name)
            if isinstance(pool.slots, int):
                expected[pool.pool_name] = (pool.slots, getattr(pool, "slot_type", "gpu"))
    return PooledBackend(backends, expected)
