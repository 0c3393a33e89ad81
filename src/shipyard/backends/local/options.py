"""The master config's `containers:` section: how trials with an `environment.image` run."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

# Arguments Shipyard sets itself: the trial's container must stay in the foreground under
# Shipyard's name, so terminate, recover and cleanup find it.
_RESERVED = ("--name", "-d", "--detach", "--rm", "--pull")


class ContainersConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # auto: podman if only podman is installed, docker if only docker is, else docker when
    # its daemon answers, else podman.
    runtime: Literal["auto", "docker", "podman"] = "auto"
    # Added to every `docker run`/`podman run`, before the image (e.g. ["--shm-size", "8g"]).
    extra_run_args: list[str] = Field(default_factory=list)

    @field_validator("extra_run_args")
    @classmethod
    def _not_reserved(cls, args: list[str]) -> list[str]:
        for arg in args:
            name = arg.split("=", 1)[0]
            if name in _RESERVED:
                raise ValueError(f"{name} is set by Shipyard; remove it from extra_run_args")
        return args
