"""A `type: ray` pool's settings: which Ray cluster, and how a trial's slots are placed."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from shipyard.backends.options import BackendOptions, SlotTypeOption


class RayOptions(BackendOptions, SlotTypeOption):
    type: Literal["ray"] = "ray"
    # The cluster's GCS address, as `ray start --head --port` printed it ("10.0.0.5:6379").
    address: str = Field(min_length=1, pattern=r"^[^\s:]+:\d+$")
    # A multi-slot trial is one placement group of one bundle per slot.
    placement_strategy: Literal["STRICT_PACK", "PACK", "SPREAD", "STRICT_SPREAD"] = "STRICT_PACK"
    namespace: str = Field(default="shipyard", min_length=1)
