"""The `resources` section: slots, priority and the settings this version only parses."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from shipyard.common.config._base import StrictModel, invalid, not_supported

DEFAULT_POOL = "default"


class ResourcesConfig(StrictModel):
    # 0: Determined's CPU-only trial. It holds no slot and sees no GPU; it runs on the
    # master's machine (local pools), bounded by the searcher's max_concurrent_trials.
    slots_per_trial: int = Field(default=1, ge=0)
    max_slots: int | None = Field(default=None, ge=1)
    # Determined's scale: 1..99, smaller runs first, 42 by default.
    priority: int = Field(default=42, ge=1, le=99)
    # Fair share among experiments of equal priority: slots in proportion to weight.
    weight: float = Field(default=1.0, gt=0)
    resource_pool: str | None = None
    shm_size: int | str | None = None
    devices: list[dict[str, Any]] = Field(default_factory=list)
    is_single_node: bool | None = None
    agent_label: str = ""

    @field_validator("resource_pool")
    @classmethod
    def _pool_name(cls, value: str | None) -> str | None:
        # Which pools exist is the master's business: it checks the name on submit.
        if value is not None and not value.strip():
            raise invalid("a resource pool name cannot be empty; leave it out for the default")
        return value

    @field_validator("shm_size", "is_single_node")
    @classmethod
    def _unset(cls, value: Any) -> Any:
        if value is not None and value is not False:
            raise not_supported("this setting is not supported yet; remove it")
        return value

    @field_validator("devices")
    @classmethod
    def _no_devices(cls, value: list) -> list:
        if value:
            raise not_supported("extra devices are not supported yet; remove them")
        return value

    @field_validator("agent_label")
    @classmethod
    def _no_label(cls, value: str) -> str:
        if value:
            raise not_supported("agent_label is not supported yet (Determined deprecated it)")
        return value
