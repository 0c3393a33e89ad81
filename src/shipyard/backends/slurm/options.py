"""A `type: slurm` pool's settings: what each trial's sbatch asks for."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from shipyard.backends.local.options import ContainersConfig
from shipyard.backends.options import BackendOptions, SlotTypeOption

# Slurm's own spellings, checked when the master reads its config rather than when a
# trial's sbatch fails: a gres name with an optional type ("gpu", "gpu:a100"), and a time
# limit in one of sbatch --time's forms ("90", "1:30:00", "2-12", "2-12:30:00", "UNLIMITED").
_GRES = r"^[A-Za-z0-9_.-]+(:[A-Za-z0-9_.-]+)?$"
_TIME = r"^(\d+|\d+:\d{1,2}|\d+:\d{1,2}:\d{1,2}|\d+-\d+(:\d{1,2}){0,2}|UNLIMITED|INFINITE)$"


class SlurmContainers(BaseModel):
    """How the pool's nodes run a trial with an environment.image (docs/backends/slurm.md)."""

    model_config = ConfigDict(extra="forbid")

    runtime: Literal["podman", "apptainer"] = "podman"
    # Added to every `podman run`, before the image (e.g. ["--shm-size=8g"]).
    extra_run_args: list[str] = Field(default_factory=list)
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

    @field_validator("extra_run_args")
    @classmethod
    def _not_reserved(cls, args: list[str]) -> list[str]:
        try:  # the master's containers section's rule: the same arguments are Shipyard's
            ContainersConfig(extra_run_args=args)
        except ValidationError as exc:
            raise ValueError(exc.errors()[0]["ctx"]["error"]) from None
        return args


class SlurmOptions(BackendOptions, SlotTypeOption):
    type: Literal["slurm"] = "slurm"
    partition: str | None = Field(default=None, min_length=1)
    account: str | None = Field(default=None, min_length=1)
    qos: str | None = Field(default=None, min_length=1)
    gres: str = Field(default="gpu", pattern=_GRES)  # GPU slots ask for --gres=<gres>:N
    time_limit: str | None = Field(default=None, pattern=_TIME)  # sbatch --time
    sbatch_args: list[str] = Field(default_factory=list)  # passed as they are, after ours
    slurm_conf: str | None = None  # SLURM_CONF for sbatch, squeue, scancel (default: theirs)
    bin_dir: str | None = None  # where sbatch and friends are (default: PATH)
    containers: SlurmContainers = Field(default_factory=SlurmContainers)
