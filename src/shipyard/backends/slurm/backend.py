"""Trials as Slurm batch jobs (docs/backends/slurm.md).

One trial run is one job: one task on one node with the trial's slots (CPUs, or GPUs of the
pool's gres); a multi-slot trial runs its ranks on that node through its launcher. A trial
larger than any node spans several: srun starts one task (the launcher) per node, each with
an equal share of the slots and the multi-node variables of launch/_nodes.py. A trial with
an environment.image runs in it through podman on each node (images.py). The batch
script (script.py) and the job's output, exit code and requeue marker are files next to the
run's log, so the log and the working dir must be on a file system the master and the nodes
share. Slurm may requeue a job (preemption, node failure): the backend then reports the run
PREEMPTED and cancels the job, and Shipyard restarts the trial from its checkpoint with a
fresh environment.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shipyard.backends.base import (
    Backend,
    Handle,
    LogSource,
    RunsImages,
    RunState,
    RunStatus,
    Slot,
    TrialLaunchSpec,
)
from shipyard.backends.health import BackgroundProbe
from shipyard.backends.logfile import read_lines
from shipyard.backends.slurm import images
from shipyard.backends.slurm.commands import SlurmCommandError, SlurmCommands
from shipyard.backends.slurm.jobs import LIVE, JobInfo, JobTable, ended_record
from shipyard.backends.slurm.nodes import make_slots, nodes_for, slots_per_node
from shipyard.backends.slurm.options import SlurmOptions
from shipyard.backends.slurm.script import JobFiles, batch_script, sbatch_args
from shipyard.common.errors import ConfigError
from shipyard.common.files import write_atomically

log = logging.getLogger(__name__)

HEALTH_MAX_AGE_S = 5.0
_ESCALATE_POLL_S = 0.5
# After the kill file: the nodes' watchers look for it every second.
_KILL_FILE_WAIT_S = 3.0


@dataclass(frozen=True)
class _Health:
    problem: str | None = None  # why no trial can run now
    unreachable: str | None = None  # why no Slurm command can answer now


class SlurmBackend(Backend, LogSource, RunsImages):
    name = "slurm"

    def __init__(self, options: SlurmOptions, pool: str) -> None:
        self.options = options
        self.pool = pool
        self._commands = SlurmCommands(options)
        self._jobs = JobTable(self._commands)
        self._lock = threading.Lock()
        self._verdicts: dict[int, RunState] = {}  # ended jobs: poll is idempotent and cheap
        self._cancelled: set[int] = set()  # requeued jobs already cancelled
        self._closed = threading.Event()
        self._nodes: dict[str, int] = {}
        self._slots: list[Slot] = []
        self._health = BackgroundProbe(
            self._check, _Health(), max_age_s=HEALTH_MAX_AGE_S, name=f"slurm-health-{pool}"
        )
        self._health.check()  # never raises: an unreachable cluster is a health problem

    # -- capacity and health -----------------------------------------------------------------

    def _check(self) -> _Health:
        """Is slurmctld there, and which slots has the partition (asked until known)?"""
        unreachable = self._commands.config_problem() or self._ping()
        problem = unreachable
        if problem is None and not self._slots:
            try:
                nodes = slots_per_node(self._commands, self.options)
            except SlurmCommandError as exc:
                problem = str(exc)
            else:
                with self._lock:
                    self._nodes = nodes
                    self._slots = make_slots(nodes, self.options)
                if not self._slots:
                    problem = f"the partition's nodes have no {self._slot_words()}"
        if problem != self._health.last.problem:
            log.warning("Slurm pool %r: %s", self.pool, problem or "slurmctld answers again")
        return _Health(problem, unreachable)

    def _ping(self) -> str | None:
        # scontrol ping answers at once when slurmctld is down; sinfo retries for seconds.
        try:
            self._commands.run("scontrol", "ping")
        except SlurmCommandError as exc:
            where = f" (SLURM_CONF={self.options.slurm_conf})" if self.options.slurm_conf else ""
            detail = str(exc).removeprefix("scontrol failed: ")
            return f"slurmctld{where} does not answer: {detail}"
        return None

    def _slot_words(self) -> str:
        return "CPUs" if self.options.slot_type == "cpu" else f"GPUs (gres {self.options.gres})"

    def capacity(self) -> list[Slot]:
        with self._lock:
            return list(self._slots)

    def health(self) -> str | None:
        """The last check's verdict; a stale one is checked again in the background, so a
        slow or dead slurmctld never blocks the caller."""
        return self._health.get().problem

    def _recheck_soon(self) -> None:
        """A command failed: health() checks Slurm again at its next call."""
        self._health.expire()

    # -- launching ----------------------------------------------------------------------------

    def launch(self, spec: TrialLaunchSpec) -> Handle:
        spanned = self._nodes_for(len(spec.slots))
        files = JobFiles.for_log(spec.log_path or str(Path(spec.workdir) / "trial.log"))
        files.log.parent.mkdir(parents=True, exist_ok=True)
        for stale in (files.exit, files.preempted, files.job_id, files.kill, files.env):
            stale.unlink(missing_ok=True)
        image = None
        if spec.image:
            per_node = len(spec.slots) // spanned
            image = images.prepare(spec, self.options.containers, files.env, per_node)
        script = batch_script(spec, files, self.options, nodes=spanned, image=image)
        write_atomically(files.script, script, mode=0o600)
        try:
            out = self._commands.run("sbatch", *sbatch_args(spec, files, self.options, spanned))
        except SlurmCommandError as exc:
            self._recheck_soon()
            raise RuntimeError(
                f"the Slurm pool {self.pool!r} could not submit the trial: {exc}"
            ) from exc
        job_id = int(out.strip().split(";")[0])  # --parsable: "id" or "id;cluster"
        # Before the handle reaches the database: a master that dies now finds the job.
        write_atomically(files.job_id, f"{job_id}\n", mode=0o644)
        self._jobs.follow(job_id)
        log.info("trial %s run %s is Slurm job %s", spec.trial_id, spec.run_id, job_id)
        data = files.handle_data(job_id)
        if spanned > 1:
            data["nodes"] = spanned
        if image:
            data[Handle.ENVIRONMENT] = {**image.environment, "job_id": job_id}
        return Handle(backend=self.name, data=data)

    def _nodes_for(self, count: int) -> int:
        """How many nodes the trial spans (the node groups of its gang)."""
        with self._lock:
            nodes = dict(self._nodes)
        if not nodes:
            return 1  # not known yet: Slurm says at submit if it cannot hold the job
        spanned = nodes_for(count, nodes)
        if spanned is None:
            raise ConfigError(
                f"a trial of {count} slots does not fit in the Slurm pool {self.pool!r}: "
                f"no set of its nodes holds an equal share each (nodes have "
                f"{', '.join(str(n) for n in sorted(nodes.values(), reverse=True))} "
                f"{self._slot_words()}); choose resources.slots_per_trial to divide evenly"
            )
        return spanned

    # -- polling ------------------------------------------------------------------------------

    def poll(self, handle: Handle) -> RunState:
        job_id = int(handle.data["job_id"])
        with self._lock:
            verdict = self._verdicts.get(job_id)
        if verdict is not None:
            return verdict
        files = JobFiles.for_log(handle.data["log_path"])
        reason = files.preempted_reason()
        if reason is not None:
            return self._ended(job_id, RunState(RunStatus.PREEMPTED, reason=reason))
        try:
            unreachable = self._health.get().unreachable  # re-checked in the background
            if unreachable is not None:
                raise SlurmCommandError(unreachable)  # no squeue to wait for
            job = self._jobs.get(job_id)
        except SlurmCommandError:
            # slurmctld does not answer: the node's exit file still tells an ended trial,
            # and any other keeps running until Slurm answers again.
            self._recheck_soon()
            code = files.exit_code()
            if code is None:
                return RunState(RunStatus.RUNNING)
            return self._ended(job_id, RunState(RunStatus.EXITED, code))
        if job is not None and job.requeued:
            return self._requeued(job_id, job, files)
        if job is not None and job.state in LIVE:
            code = files.exit_code() if job.state == "COMPLETING" else None
            if code is None:
                return RunState(RunStatus.RUNNING)
            return self._ended(job_id, RunState(RunStatus.EXITED, code))
        return self._ended(job_id, self._how_it_ended(job_id, files))

    def _how_it_ended(self, job_id: int, files: JobFiles) -> RunState:
        code = files.exit_code()  # the script's word: authoritative
        if code is not None:
            return RunState(RunStatus.EXITED, code)
        record = ended_record(self._commands, job_id)
        if record is None:
            return RunState(
                RunStatus.LOST,
                reason=f"Slurm knows no job {job_id} and it left no exit code in {files.exit}",
            )
        if record.requeued:
            return self._requeued(job_id, record, files)
        if record.state == "COMPLETED" or record.exit_code:
            return RunState(RunStatus.EXITED, record.exit_code or 0)
        why = f" ({record.reason})" if record.reason and record.reason != "None" else ""
        return RunState(
            RunStatus.LOST,
            reason=f"Slurm ended job {job_id} as {record.state}{why} before the trial "
            "recorded an exit code",
        )

    def _requeued(self, job_id: int, job: JobInfo, files: JobFiles) -> RunState:
        """Slurm took the job back and would run it again with the environment of this run:
        cancel that copy; the run is over once the first copy's processes are gone."""
        with self._lock:
            cancel = job_id not in self._cancelled
            self._cancelled.add(job_id)
        if cancel:
            log.info("Slurm requeued job %s (%s): cancelling its second copy", job_id, job.state)
            self._cancel(job_id)
        if job.state in ("COMPLETING", "RUNNING") and files.exit_code() is None:
            return RunState(RunStatus.RUNNING)  # the first copy is still being stopped
        verb = "preempted" if job.state == "PREEMPTED" else "requeued"
        reason = f"Slurm {verb} job {job_id}"
        write_atomically(files.preempted, reason + "\n", mode=0o644)  # a restarted master agrees
        return self._ended(job_id, RunState(RunStatus.PREEMPTED, reason=reason))

    def _ended(self, job_id: int, state: RunState) -> RunState:
        """Remember a final verdict: a job that ended stays ended."""
        if state.status == RunStatus.RUNNING:
            return state  # a requeued job's first copy is still being stopped
        with self._lock:
            self._verdicts[job_id] = state
        self._jobs.forget(job_id)
        return state

    # -- stopping -----------------------------------------------------------------------------

    def terminate(self, handle: Handle, grace_s: float) -> None:
        job_id = int(handle.data["job_id"])
        try:
            job = self._jobs.get(job_id)
        except SlurmCommandError as exc:
            log.warning("cannot terminate Slurm job %s now: %s", job_id, exc)
            return  # the master asks again after its restart or next deadline
        if job is None or job.state not in LIVE:
            return
        if job.state == "PENDING":
            self._cancel(job_id)  # nothing runs yet to be told
            return
        # One node: the trial runs in the batch script (--full: its children, not only the
        # script). A gang runs in srun's tasks: signal those only, as srun would kill its
        # tasks at once on a SIGTERM of its own.
        full = ["--full"] if int(handle.data.get("nodes", 1)) == 1 else []
        try:
            self._commands.run("scancel", "--signal=TERM", *full, str(job_id))
        except SlurmCommandError as exc:
            log.warning("SIGTERM to Slurm job %s failed: %s", job_id, exc)
        threading.Thread(
            target=self._escalate,
            args=(job_id, JobFiles.for_log(handle.data["log_path"]), grace_s),
            daemon=True,
            name=f"scancel-{job_id}",
        ).start()

    def _escalate(self, job_id: int, files: JobFiles, grace_s: float) -> None:
        if self._ends_within(job_id, grace_s) is not False:
            return  # it ended within the grace, or the backend closed
        if files.env.exists():  # an image run (only one writes an env file)
            # A container outlives the SIGKILL Slurm gives its CLI: each node's watcher kills
            # it when this file appears (images.py), and the job ends with it.
            write_atomically(files.kill, "grace over\n", mode=0o644)
            if self._ends_within(job_id, _KILL_FILE_WAIT_S) is not False:
                return
        self._cancel(job_id)

    def _ends_within(self, job_id: int, seconds: float) -> bool | None:
        """Whether the job ends (or starts completing) within ``seconds``; None if the
        backend closed meanwhile."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self._closed.wait(min(_ESCALATE_POLL_S, max(0.0, deadline - time.monotonic()))):
                return None
            try:
                job = self._jobs.get(job_id)
            except SlurmCommandError:
                continue
            if job is None or job.state not in LIVE or job.state == "COMPLETING":
                return True
        return False

    def _cancel(self, job_id: int) -> None:
        """End the job: Slurm signals what is left (SIGTERM, then SIGKILL after its
        KillWait) and frees the allocation."""
        try:
            self._commands.run("scancel", str(job_id))
        except SlurmCommandError as exc:
            log.warning("scancel of Slurm job %s failed: %s", job_id, exc)
        self._jobs.expire()

    # -- after a master restart -----------------------------------------------------------------

    def recover(self, handle_data: dict[str, Any]) -> Handle | None:
        if "job_id" not in handle_data or "log_path" not in handle_data:
            return None
        handle = Handle(backend=self.name, data=dict(handle_data))
        state = self.poll(handle)
        if state.status == RunStatus.LOST:
            return None
        return handle

    def find_launch(self, log_path: str) -> Handle | None:
        files = JobFiles.for_log(log_path)
        job_id = files.recorded_job_id()
        if job_id is None:
            return None  # sbatch never answered: no job was submitted
        return self.recover(files.handle_data(job_id))

    # -- output -------------------------------------------------------------------------------

    def read_output(self, handle: Handle, offset: int, final: bool = False) -> tuple[bytes, int]:
        return read_lines(handle.data["log_path"], offset, final)

    def close(self) -> None:
        self._closed.set()
        self._health.close()
