"""What Slurm says about the backend's jobs: one squeue call for all of them, cached for a
moment (the master polls every running trial every second), and the record of a job that
has ended (scontrol while Slurm remembers it, then the job completion log via sacct -c)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from shipyard.backends.slurm.commands import SlurmCommandError, SlurmCommands

# Still holding (or about to hold) the job's allocation.
LIVE = frozenset(
    {
        "PENDING",
        "CONFIGURING",
        "RUNNING",
        "COMPLETING",
        "SUSPENDED",
        "RESIZING",
        "SIGNALING",
        "STAGE_OUT",
        "STOPPED",
    }
)
# Slurm took the allocation back to give it to others (or will run the job again).
TAKEN_BACK = frozenset({"PREEMPTED", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED"})
_SQUEUE_FIELDS = "JobID:|,State:|,RestartCnt:|,Reason:|"


@dataclass(frozen=True)
class JobInfo:
    state: str  # Slurm's job state: RUNNING, PENDING, COMPLETED, CANCELLED, ...
    restarts: int  # how often Slurm requeued it
    reason: str = ""
    exit_code: int | None = None  # an ended job's (the signal as a negative number)

    @property
    def requeued(self) -> bool:
        return self.restarts > 0 or self.state in TAKEN_BACK


class JobTable:
    """squeue for every job the backend follows, at most once per ``max_age_s``."""

    def __init__(self, commands: SlurmCommands, max_age_s: float = 0.5) -> None:
        self._commands = commands
        self._max_age_s = max_age_s
        self._lock = threading.Lock()
        self._followed: set[int] = set()
        self._jobs: dict[int, JobInfo] = {}
        self._asked: frozenset[int] = frozenset()
        self._at = 0.0

    def follow(self, job_id: int) -> None:
        with self._lock:
            self._followed.add(job_id)

    def forget(self, job_id: int) -> None:
        with self._lock:
            self._followed.discard(job_id)

    def expire(self) -> None:
        with self._lock:
            self._at = 0.0

    def get(self, job_id: int) -> JobInfo | None:
        """The job as squeue shows it (also for a while after it ended), or None if Slurm
        does not know it. SlurmCommandError if slurmctld does not answer."""
        with self._lock:
            self._followed.add(job_id)
            fresh = time.monotonic() - self._at < self._max_age_s
            if not fresh or job_id not in self._asked:
                self._refresh()
            return self._jobs.get(job_id)

    def _refresh(self) -> None:
        ids = frozenset(self._followed)
        try:
            out = self._commands.run(
                "squeue",
                "--noheader",
                "--states=all",
                f"--jobs={','.join(str(i) for i in sorted(ids))}",
                f"--Format={_SQUEUE_FIELDS}",
            )
        except SlurmCommandError as exc:
            if "Invalid job id" not in str(exc):
                raise
            out = ""  # squeue's answer when the one job asked about is unknown
        jobs = {}
        for line in out.splitlines():
            parts = line.split("|")
            if len(parts) >= 3 and parts[0].strip().isdigit():
                restarts = parts[2].strip()
                jobs[int(parts[0])] = JobInfo(
                    state=parts[1].strip(),
                    restarts=int(restarts) if restarts.isdigit() else 0,
                    reason=parts[3].strip() if len(parts) > 3 else "",
                )
        self._jobs, self._asked, self._at = jobs, ids, time.monotonic()


def ended_record(commands: SlurmCommands, job_id: int) -> JobInfo | None:
    """How an ended job ended: scontrol while slurmctld remembers it (MinJobAge), else the job
    completion log (sacct -c; needs JobCompType=jobcomp/filetxt). None if neither knows it."""
    try:
        out = commands.run("scontrol", "--oneliner", "show", "job", str(job_id))
    except SlurmCommandError:
        out = ""
    fields = dict(
        word.split("=", 1) for line in out.splitlines()[:1] for word in line.split() if "=" in word
    )
    if "JobState" in fields:
        restarts = fields.get("Restarts", "0")
        return JobInfo(
            state=fields["JobState"],
            restarts=int(restarts) if restarts.isdigit() else 0,
            reason=fields.get("Reason", ""),
            exit_code=parse_exit_code(fields.get("ExitCode", "")),
        )
    try:
        out = commands.run(
            "sacct",
            "-c",
            "--noheader",
            "--parsable2",
            f"--jobs={job_id}",
            "--format=state,exitcode",
        )
    except SlurmCommandError:
        return None
    runs = [line.split("|") for line in out.splitlines() if line.count("|") == 1]
    if not runs:
        return None
    # One line per run of the job: a requeued job has several, the last one is how it ended.
    state, code = runs[-1]
    return JobInfo(
        state=state.split()[0],  # "CANCELLED by 0" -> "CANCELLED"
        restarts=len(runs) - 1,
        exit_code=parse_exit_code(code),
    )


def parse_exit_code(text: str) -> int | None:
    """Slurm's "code:signal": the code, or minus the signal that killed the script."""
    code, _, signal = text.partition(":")
    if not code.isdigit() or not signal.isdigit():
        return None
    return -int(signal) if int(signal) else int(code)
