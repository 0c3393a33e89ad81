"""Where trials run: the Backend interface (see DESIGN.md, "The interfaces").

A backend knows slots and processes, never the database. What a backend can do beyond the
ABC is a mixin it declares, and callers ask with `issubclass`/`isinstance`, never by the
backend's name: `LogSource` (hands the master what its trials print), `RunsImages` and
`NeedsImage` (containers), `OnTheMastersMachine` (pools that split the master's machine).
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

# A run that died of signal N is recorded with exit code -N, as Popen reports it, so the master
# says "killed by signal N" whatever the backend. A shell (or a process that waited for the
# trial) reports 128 + N instead: these turn that into -N.
SHELL_SIGNAL_AS_NEGATIVE = 'rec=$code; [ "$code" -gt 128 ] && rec=-$((code - 128))'


def signal_as_negative(code: int) -> int:
    """A shell's exit status as recorded: 128 + N (death by signal N) is -N."""
    return 128 - code if code > 128 else code


@dataclass(frozen=True)
class Slot:
    id: str  # "cpu0", "gpu1": stable across master restarts
    kind: str  # "cpu" or "gpu"
    device: str  # GPU name/uuid, or "cpu"
    index: int  # device index (CUDA ordinal for GPUs)


def numbered_slots(kind: str, count: int, device: str) -> list[Slot]:
    """``count`` slots of one kind on one ``device``: "<kind>0" .. "<kind><count-1>", each
    indexed by its number."""
    return [Slot(id=f"{kind}{i}", kind=kind, device=device, index=i) for i in range(count)]


@dataclass
class TrialLaunchSpec:
    trial_id: int
    run_id: int
    argv: list[str]
    env: dict[str, str]
    workdir: str
    slots: list[Slot]
    image: str | None = None
    log_path: str | None = None  # where the backend writes the process's output
    # The experiment's bind_mounts ({host_path, container_path, read_only, propagation}): a
    # container backend mounts them; a process on the host sees the host's files anyway.
    bind_mounts: list[dict[str, Any]] = field(default_factory=list)
    # False: the trial runs where the master's disk is not (Backend.shares_masters_files):
    # argv starts shipyard.launch.entry, which fetches the code and config over HTTP and
    # sends the output back; workdir is empty and nothing of the master's may be mounted.
    shares_files: bool = True
    # environment.force_pull_image: a container backend pulls the image before every run
    # (`run --pull always`, imagePullPolicy Always) instead of using the node's copy.
    force_pull_image: bool = False


@dataclass
class Handle:
    """What the master keeps (as JSON, in the trial row) to find a launched trial again."""

    # A key of ``data`` a backend may fill at launch with where the run really is (a
    # JSON object: image and image id, engine job id, node); the master records it with the
    # run, and `trial describe` shows it.
    ENVIRONMENT = "environment"

    backend: str
    data: dict[str, Any] = field(default_factory=dict)


class RunStatus(StrEnum):
    RUNNING = "RUNNING"
    EXITED = "EXITED"
    LOST = "LOST"  # the backend no longer knows the process and has no exit code
    # The engine took the slots back (Slurm requeued or preempted the job, ...): the run is
    # over and the trial resumes from its checkpoint, as after Shipyard's own preemption.
    PREEMPTED = "PREEMPTED"


@dataclass(frozen=True)
class RunState:
    status: RunStatus
    exit_code: int | None = None
    reason: str | None = None  # the engine's words: why it was PREEMPTED or LOST, or more
    # on an exit (a Pod that cannot start)
    # The end of what a run that sends its own output printed, read from the engine (a
    # failed Pod's log): the master quotes it if the run sent it nothing.
    last_output: str | None = None


class Backend(abc.ABC):
    name: str = "abstract"

    @abc.abstractmethod
    def capacity(self) -> list[Slot]:
        """Every slot this backend can run trials on."""

    @abc.abstractmethod
    def launch(self, spec: TrialLaunchSpec) -> Handle:
        """Start the trial's processes: all of them or none (a gang)."""

    @abc.abstractmethod
    def poll(self, handle: Handle) -> RunState:
        """Idempotent: may be called any number of times, also after the exit."""

    @abc.abstractmethod
    def terminate(self, handle: Handle, grace_s: float) -> None:
        """SIGTERM, then SIGKILL after grace_s; returns at once."""

    def release(self, handle: Handle) -> None:  # noqa: B027 - optional hook
        """After an exit: make sure nothing of the trial still runs on its slots."""

    @abc.abstractmethod
    def recover(self, handle_data: dict[str, Any]) -> Handle | None:
        """Re-attach to a trial launched before a master restart, or None if it is gone."""

    def shares_masters_files(self, slots: list[Slot]) -> bool:
        """Whether a trial on these slots sees the master's disk at the master's paths (its
        working directory, the experiment config, shared_fs checkpoints, its log file). A
        backend whose nodes do not gets specs with ``shares_files`` false."""
        return True

    def find_launch(self, log_path: str) -> Handle | None:
        """Find a trial launched with this spec.log_path whose handle the master never
        recorded (it died in between), or None. Optional: without it such a trial is
        requeued."""
        return None

    def health(self) -> str | None:
        """None when the engine answers; else why it cannot run trials now (its pool's
        trials wait with this reason). Optional: a local backend is always healthy."""
        return None

    def set_exit_listener(self, listener) -> None:  # noqa: B027 - optional hook
        """Called with no argument whenever a launched trial may have exited, so the
        master reacts at once instead of on its next poll. Optional."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release threads and resources; running trials are left running."""


class LogSource(abc.ABC):
    """Mixin: the backend can read what a trial printed, from an offset on."""

    @abc.abstractmethod
    def read_output(self, handle: Handle, offset: int, final: bool = False) -> tuple[bytes, int]:
        """Bytes written since offset and the new offset: whole lines only, unless final
        (the trial has exited, so a last line without a newline is complete too)."""


class RunsImages:
    """Mixin: ``launch`` runs a spec that names an image in a container of that image. A
    backend without it runs trials in its nodes' environment, so the master refuses an
    experiment with environment.image for its pools at submit."""


class NeedsImage(RunsImages):
    """Mixin: every trial runs in a container, so the master refuses an experiment without
    environment.image for its pools at submit."""


class OnTheMastersMachine:
    """Mixin: runs trials on the master's own machine. The master makes one such backend and
    its pools split that machine's slots (a count or a list of slot ids each); a backend
    without it is an engine of its own, made per pool, whose pool takes a count of its slots."""
