"""A `type: ray` pool's settings: which Ray cluster, and how a trial's slots are placed."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from shipyard.backends.options import BackendOptions, NodeContainers, SlotTypeOption


class RayOptions(BackendOptions, SlotTypeOption):
    type: Literal["ray"] = "ray"
    # The cluster's GCS address, as `ray start --head --port` printed it ("10.0.0.5:6379").
    address: str = Field(min_length=1, pattern=r"^[^\s:]+:\d+$")
    # How a multi-slot trial's slots are placed (placement.py): STRICT_PACK, one bundle on one
    # node; PACK, one node when one holds the trial, else equal bundles on as few nodes as
    # fit; SPREAD/STRICT_SPREAD, one bundle per slot over several nodes. Several bundles run
    # as a multi-node gang, one actor and one launcher each.
    placement_strategy: Literal["STRICT_PACK", "PACK", "SPREAD", "STRICT_SPREAD"] = "STRICT_PACK"
    namespace: str = Field(default="shipyard", min_length=1)
    # Added for the backend (docs/backends/ray.md):
    # Where a node unpacks a trial's code and writes its output; None: the node's temp dir.
    work_root: str | None = None
    # A trial whose cluster stops answering is reported RUNNING (it may well be) for this
    # long, then LOST, so the master restarts it from its checkpoint elsewhere.
    lost_after_s: float = Field(default=600.0, gt=0)
    # The largest code directory shipped to a node with each run (tar.gz, in MB).
    max_code_mb: float = Field(default=100.0, gt=0)
    # How the nodes run a trial with an environment.image (images.py): podman, as on Slurm.
    containers: NodeContainers = Field(default_factory=NodeContainers)
