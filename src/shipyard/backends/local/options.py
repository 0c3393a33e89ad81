"""The master config's `containers:` section: how trials with an `environment.image` run."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from shipyard.backends.options import ExtraRunArgs


class ContainersConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # auto: podman if only podman is installed, docker if only docker is, else docker when
    # its daemon answers, else podman.
    runtime: Literal["auto", "docker", "podman"] = "auto"
    # Added to every `docker run`/`podman run`, before the image (e.g. ["--shm-size", "8g"]).
    extra_run_args: ExtraRunArgs = Field(default_factory=list)
