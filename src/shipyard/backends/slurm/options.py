"""A `type: slurm` pool's settings: what each trial's sbatch asks for."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from shipyard.backends.options import BackendOptions, SlotTypeOption


class SlurmOptions(BackendOptions, SlotTypeOption):
    type: Literal["slurm"] = "slurm"
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    gres: str = Field(default="gpu", min_length=1)  # GPU slots ask for --gres=<gres>:N
    time_limit: str | None = None  # sbatch --time, e.g. "2:00:00" or "90" (minutes)
    sbatch_args: list[str] = Field(default_factory=list)  # passed as they are
    slurm_conf: str | None = None  # SLURM_CONF for sbatch, squeue, scancel (default: theirs)
    bin_dir: str | None = None  # where sbatch and friends are (default: PATH)
