"""How a launcher ends: its exit codes, a rank's exit in words, and the reason the master
records for the run (appended to what a rank itself reported)."""

from __future__ import annotations

import os
import signal

from shipyard.common.log_prefix import LAUNCHER

EXIT_USAGE = 2
EXIT_TERMINATED = 128 + signal.SIGTERM  # 143
EXIT_CANNOT_START = 127


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"was killed by {name}"
    return f"exited with code {code}"


def exit_status(code: int) -> int:
    """A process's exit as a shell reports it: a signal death is 128+signal."""
    return 128 - code if code < 0 else code


def tell_master(message: str) -> None:
    """Add why the gang failed to the run's exit reason. Only inside a Shipyard trial; a
    failure is noted on stderr and ignored."""
    master = os.environ.get("SHIPYARD_MASTER")
    trial_id = os.environ.get("SHIPYARD_TRIAL_ID", "")
    run_id = os.environ.get("SHIPYARD_RUN_ID", "")
    if not master or not trial_id.isdigit() or not run_id.isdigit():
        return
    # Imported on a failure only: a launcher starts without the trial side's HTTP client.
    from shipyard.common.errors import ShipyardError
    from shipyard.core._http import JsonHttp
    from shipyard.core._run_error import send_run_error

    try:
        http = JsonHttp(master)
    except ShipyardError:
        return  # not a URL: every rank's shipyard.core.init() has said so in the log
    send_run_error(http, int(trial_id), int(run_id), message, append=True, who=LAUNCHER)
