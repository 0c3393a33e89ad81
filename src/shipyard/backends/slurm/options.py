"""A `type: slurm` pool's settings: what each trial's sbatch asks for."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from shipyard.backends.options import BackendOptions, NodeContainers, SlotTypeOption

# Slurm's own spellings, checked when the master reads its config rather than when a
# trial's sbatch fails: a gres name with an optional type ("gpu", "gpu:a100"), and a time
# limit in one of sbatch --time's forms ("90", "1:30:00", "2-12", "2-12:30:00", "UNLIMITED").
_GRES = r"^[A-Za-z0-9_.-]+(:[A-Za-z0-9_.-]+)?$"
_TIME = r"^(\d+|\d+:\d{1,2}|\d+:\d{1,2}:\d{1,2}|\d+-\d+(:\d{1,2}){0,2}|UNLIMITED|INFINITE)$"


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
    containers: NodeContainers = Field(default_factory=NodeContainers)
