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

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from shipyard.backends.base import Slot
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


class PoolConfig(_Strict):
    pool_name: str = Field(min_length=1, max_length=64)
    description: str = ""
    slots: int | list[str] | None = None
    scheduler: SchedulerConfig = Field(default_factory=SchedulerConfig)


class MasterConfig(_Strict):
    resource_pools: list[PoolConfig] = Field(
        default_factory=lambda: [PoolConfig(pool_name=DEFAULT_POOL)], min_length=1
    )
    default_compute_pool: str | None = None

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
            {"path": ".".join(str(p) for p in err["loc"]) or "<config>", "message": err["msg"]}
            for err in exc.errors()
        ]
        raise ConfigError(f"the master config {path} is not valid", details) from exc


@dataclass(frozen=True)
class Pool:
    name: str
    slots: tuple[Slot, ...]
    scheduler: str  # "priority" or "fair_share"
    preemption: bool

    @property
    def slot_ids(self) -> frozenset[str]:
        return frozenset(s.id for s in self.slots)


def partition(capacity: list[Slot], config: MasterConfig) -> dict[str, Pool]:
    """Give each pool its slots, in the backend's order: a count takes the next ones, a list
    names them, and the one pool without `slots` takes what is left."""
    by_id = {s.id: s for s in capacity}
    taken: set[str] = set()
    chosen: dict[str, list[Slot]] = {}
    problems: list[dict] = []
    for i, pool in enumerate(config.resource_pools):
        where = f"resource_pools.{i}.slots"
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
    for i, pool in enumerate(config.resource_pools):
        if isinstance(pool.slots, int):
            rest = [s for s in capacity if s.id not in taken]
            if pool.slots > len(rest):
                problems.append(
                    {
                        "path": f"resource_pools.{i}.slots",
                        "message": f"{pool.slots} slots asked, {len(rest)} left of {len(capacity)}",
                    }
                )
                continue
            chosen[pool.pool_name] = rest[: pool.slots]
            taken.update(s.id for s in rest[: pool.slots])
    open_ended = [p for p in config.resource_pools if p.slots is None]
    if len(open_ended) > 1:
        problems.append(
            {
                "path": "resource_pools",
                "message": "only one pool may leave out `slots` (it takes the rest)",
            }
        )
    for pool in open_ended[:1]:
        chosen[pool.pool_name] = [s for s in capacity if s.id not in taken]
    if problems:
        raise ConfigError("the resource pools do not fit this machine's slots", problems)
    return {
        p.pool_name: Pool(
            name=p.pool_name,
            slots=tuple(chosen[p.pool_name]),
            scheduler=p.scheduler.type,
            preemption=p.scheduler.preemption,
        )
        for p in config.resource_pools
    }
