"""A resource pool's backend settings in the master's config file: `type` names the backend,
the other keys are that backend's own (each backend package has an options.py)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class BackendOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: str

    def shares_masters_files(self) -> bool:
        """Whether the pool's nodes see the master's disk at its paths (Backend's method of
        the same name); known from the options alone, so the master checks at submit."""
        return True


class LocalOptions(BackendOptions):
    """Processes on the master's machine: the local pools share its slots."""

    type: Literal["local"] = "local"


class SlotTypeOption(BaseModel):
    """For engines that schedule both: slots are GPUs, or CPUs (no GPU asked)."""

    slot_type: Literal["gpu", "cpu"] = "gpu"
    # Seconds to wait for the engine when connecting or asking it something.
    timeout_s: float = Field(default=30.0, gt=0)
