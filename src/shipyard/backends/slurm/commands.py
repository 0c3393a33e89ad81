"""Slurm's client commands (sbatch, squeue, scancel, scontrol, sinfo, sacct) as the pool's
options say to run them: its slurm.conf, its bin_dir, within its timeout."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from shipyard.backends.slurm.options import SlurmOptions


class SlurmCommandError(Exception):
    """A Slurm command failed, timed out or is missing; the message says which and why."""


class SlurmCommands:
    def __init__(self, options: SlurmOptions) -> None:
        self.conf = options.slurm_conf
        self.bin_dir = options.bin_dir
        self.timeout_s = options.timeout_s
        self.env = _client_env(options.slurm_conf)

    def path(self, tool: str) -> str:
        return str(Path(self.bin_dir) / tool) if self.bin_dir else tool

    def config_problem(self) -> str | None:
        """What makes every command fail at once, found without running one (a missing
        slurm.conf makes them retry for a minute before they give up)."""
        if self.conf is not None and not Path(self.conf).is_file():
            return f"slurm_conf {self.conf} is not a file"
        if self.bin_dir is not None and not Path(self.path("sbatch")).is_file():
            return f"bin_dir {self.bin_dir} has no sbatch"
        return None

    def run(self, tool: str, *args: str, timeout_s: float | None = None) -> str:
        """The command's stdout; SlurmCommandError with its stderr if it fails."""
        argv = [self.path(tool), *args]
        try:
            done = subprocess.run(
                argv,
                capture_output=True,
                text=True,
                env=self.env,
                stdin=subprocess.DEVNULL,
                timeout=timeout_s or self.timeout_s,
            )
        except FileNotFoundError:
            where = f"in bin_dir {self.bin_dir}" if self.bin_dir else "on PATH"
            raise SlurmCommandError(f"{tool} not found {where}") from None
        except subprocess.TimeoutExpired:
            raise SlurmCommandError(
                f"{tool} gave no answer within {timeout_s or self.timeout_s:g} s (timeout_s)"
            ) from None
        if done.returncode != 0:
            # Without the banners some commands add ("*** RESTORE SLURMCTLD DAEMON ***").
            lines = [line.strip() for line in (done.stderr or done.stdout).splitlines()]
            detail = " ".join(line for line in lines if line and not line.startswith("*"))
            raise SlurmCommandError(f"{tool} failed: {detail or f'exit {done.returncode}'}")
        return done.stdout


def _client_env(slurm_conf: str | None) -> dict[str, str]:
    """The master's environment without its own settings (SHIPYARD_*) and without the
    variables of a Slurm job the master may itself run in: sbatch passes its environment on
    to the job (--export=ALL), and the trial must not see either."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("SHIPYARD_") and not (k.startswith("SLURM_") and k != "SLURM_CONF")
    }
    if slurm_conf is not None:
        env["SLURM_CONF"] = slurm_conf
    return env
