"""A resource pool's backend settings in the master's config file: `type` names the backend,
the other keys are that backend's own (each backend package has an options.py)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

# Arguments Shipyard sets itself on every `docker run`/`podman run`: the trial's container
# must stay in the foreground under Shipyard's name, so terminate, recover and cleanup find it.
_RESERVED_RUN_ARGS = ("--name", "-d", "--detach", "--rm", "--pull")


def not_reserved(extra_run_args: list[str]) -> list[str]:
    """The arguments, unless one is Shipyard's own (ValueError naming it)."""
    for arg in extra_run_args:
        name = arg.split("=", 1)[0]
        if name in _RESERVED_RUN_ARGS:
            raise ValueError(f"{name} is set by Shipyard; remove it from extra_run_args")
    return extra_run_args


# A containers section's extra_run_args: added to every run command, before the image.
ExtraRunArgs = Annotated[list[str], AfterValidator(not_reserved)]


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


class NodeContainers(BaseModel):
    """How an engine's nodes run a trial with an environment.image: `podman run` of the image
    on the node (a pool's `containers:` section; docs/backends/slurm.md, ray.md)."""

    model_config = ConfigDict(extra="forbid")

    runtime: Literal["podman", "apptainer"] = "podman"
    extra_run_args: ExtraRunArgs = Field(default_factory=list)  # e.g. ["--shm-size=8g"]
    # Variables for podman on the master (which looks up the image's id) and on the nodes:
    # CONTAINERS_STORAGE_CONF pointing at the cluster's shared image store, CONTAINERS_CONF.
    engine_env: dict[str, str] = Field(default_factory=dict)

    @field_validator("runtime")
    @classmethod
    def _supported(cls, runtime: str) -> str:
        if runtime == "apptainer":
            # Not installable where Shipyard is tested: no command line is built untested.
            raise ValueError("apptainer is not supported yet; use podman on the nodes")
        return runtime
