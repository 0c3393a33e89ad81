"""Trials as local processes: one process group per trial, output to a file.

A trial is started through `sh -c 'echo $$ > pid_file; "$@"; echo $? > exit_file'`: the
pid file exists before the trial runs, so a master that dies before it recorded the launch
finds the process again (`find_launch`); the exit file keeps the exit code across a master
restart, since the process is not the new master's child. User values are passed as
arguments, never pasted into the script.

A trial with an image runs the same way, with `docker run`/`podman run` as the process
(containers.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from shipyard.backends.base import (
    SHELL_SIGNAL_AS_NEGATIVE,
    Backend,
    Handle,
    LogSource,
    OnTheMastersMachine,
    RunsImages,
    RunState,
    RunStatus,
    Slot,
    TrialLaunchSpec,
)
from shipyard.backends.local import containers
from shipyard.backends.local.containers import ContainerRuntime
from shipyard.backends.local.gpus import cpu_slots, detect_gpus
from shipyard.backends.local.options import ContainersConfig
from shipyard.backends.logfile import read_lines
from shipyard.common.files import read_int

# The shell outlives a SIGTERM to the group (`trap : TERM`): the trial, or the container
# CLI that forwards it, may checkpoint for a while, and the trial counts as running until it
# really exits. A death by signal N (code 128+N) is recorded as -N, as Popen reports it.
_WRAPPER = (
    'trap : TERM; echo $$ > "$0.pid.tmp" && mv "$0.pid.tmp" "$0.pid" || exit 125; '
    f'"$@"; code=$?; {SHELL_SIGNAL_AS_NEGATIVE}; '
    'echo $rec > "$0.tmp" && mv "$0.tmp" "$0"; exit $code'
)


class LocalBackend(Backend, LogSource, RunsImages, OnTheMastersMachine):
    name = "local"

    def __init__(
        self,
        slots: int | None = None,
        containers: ContainersConfig | None = None,
        engine_env: Mapping[str, str] | None = None,
    ) -> None:
        """``containers``: the master config's section for trials with an image;
        ``engine_env``: variables for the engine's CLI on top of the master's environment
        (DOCKER_HOST, CONTAINERS_CONF, ...)."""
        gpus = detect_gpus()
        self._slots = gpus or cpu_slots(slots or os.cpu_count() or 1)
        self._children: dict[int, subprocess.Popen] = {}
        self._lock = threading.Lock()
        self._listener = None
        self._containers = containers or ContainersConfig()
        self._engine_env = dict(engine_env or {})
        self._runtime: ContainerRuntime | None = None  # chosen at the first image
        self._removed: set[str] = set()  # containers killed by terminate, until release

    def capacity(self) -> list[Slot]:
        return list(self._slots)

    def set_exit_listener(self, listener) -> None:
        self._listener = listener

    def launch(self, spec: TrialLaunchSpec) -> Handle:
        log_path = Path(spec.log_path or Path(spec.workdir) / "trial.log")
        log_path.parent.mkdir(parents=True, exist_ok=True)
        exit_file = log_path.with_suffix(".exit")
        exit_file.unlink(missing_ok=True)
        extra: dict[str, Any] = {}
        if spec.image:
            launch = containers.prepare(
                self._container_runtime(), spec, exit_file, self._containers.extra_run_args
            )
            # Kept next to the pid file: a master that dies before recording the handle
            # still finds the container (find_launch).
            Path(f"{exit_file}.container").write_text(json.dumps(launch.data))
            argv, env, extra = launch.argv, launch.cli_env, launch.data
        else:
            argv, env = spec.argv, dict(spec.env)
            gpus = [s.index for s in spec.slots if s.kind == "gpu"]
            if gpus or not spec.slots:  # no slot (slots_per_trial 0): no GPU either
                env["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in gpus)
        with open(log_path, "ab") as out:
            proc = subprocess.Popen(
                ["/bin/sh", "-c", _WRAPPER, str(exit_file), *argv],
                cwd=spec.workdir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # own process group: survives the master, killed as one
            )
        start_time = _start_time(proc.pid)  # before anything can reap it
        with self._lock:
            self._children[proc.pid] = proc
        threading.Thread(target=self._wait, args=(proc,), daemon=True).start()
        data = {
            "pid": proc.pid,
            "start_time": start_time,
            "exit_file": str(exit_file),
            "log_path": str(log_path),
            **extra,
        }
        return Handle(backend=self.name, data=data)

    def _container_runtime(self) -> ContainerRuntime:
        if self._runtime is None:
            self._runtime = ContainerRuntime.choose(self._containers, self._engine_env)
        return self._runtime

    def _kill(self, handle: Handle) -> None:
        """SIGKILL what is left of the trial's process group, its container first (a SIGKILL
        to the CLI would leave the container running). A container is removed once: after
        terminate removed it, release only forgets it."""
        container = handle.data.get("container")
        if container:
            with self._lock:
                removed = container["name"] in self._removed
                self._removed.add(container["name"])
            if not removed:
                runtime = ContainerRuntime.named(container["runtime"], self._engine_env)
                if runtime is not None:
                    runtime.remove(container["name"])
        _killpg(handle.data["pid"], signal.SIGKILL)

    def _wait(self, proc: subprocess.Popen) -> None:
        proc.wait()
        if self._listener is not None:
            self._listener()

    def poll(self, handle: Handle) -> RunState:
        pid = handle.data["pid"]
        with self._lock:
            proc = self._children.get(pid)
        if proc is not None:
            code = proc.poll()
            if code is None:
                return RunState(RunStatus.RUNNING)
            recorded = read_int(handle.data["exit_file"])
            return RunState(RunStatus.EXITED, code if recorded is None else recorded)
        if _alive(pid, handle.data.get("start_time")):
            return RunState(RunStatus.RUNNING)
        code = read_int(handle.data["exit_file"])
        if code is None:
            return RunState(RunStatus.LOST)
        return RunState(RunStatus.EXITED, code)

    def terminate(self, handle: Handle, grace_s: float) -> None:
        pid = handle.data["pid"]
        if not _alive(pid, handle.data.get("start_time")):
            self.release(handle)
            return
        _killpg(pid, signal.SIGTERM)

        def escalate() -> None:
            # Wait on the whole group, not the wrapper: the shell dies at SIGTERM at once,
            # while a trial that handles SIGTERM may still be running.
            deadline = time.monotonic() + grace_s
            while time.monotonic() < deadline and _group_alive(pid):
                time.sleep(0.05)
            if _group_alive(pid):
                self._kill(handle)

        threading.Thread(target=escalate, daemon=True).start()

    def release(self, handle: Handle) -> None:
        """Kill whatever is left of the trial's process group (a trial that ignored SIGTERM,
        background children of one that exited), so its slots are really free."""
        self._kill(handle)
        container = handle.data.get("container")
        if container:
            with self._lock:
                self._removed.discard(container["name"])
            Path(container["env_file"]).unlink(missing_ok=True)

    def find_launch(self, log_path: str) -> Handle | None:
        """The trial launched with this log path, if its wrapper is running or ran."""
        exit_file = Path(log_path).with_suffix(".exit")
        pid = read_int(f"{exit_file}.pid")
        if pid is None:
            return None  # the wrapper never started: nothing runs
        data = {
            "pid": pid,
            "start_time": _start_time(pid),
            "exit_file": str(exit_file),
            "log_path": log_path,
        }
        try:  # a container's name and runtime, written before it started
            data.update(json.loads(Path(f"{exit_file}.container").read_text()))
        except (OSError, ValueError):
            pass
        return self.recover(data)

    def recover(self, handle_data: dict[str, Any]) -> Handle | None:
        handle = Handle(backend=self.name, data=dict(handle_data))
        if "pid" not in handle_data:
            return None
        if self.poll(handle).status == RunStatus.LOST:
            return None
        return handle

    def read_output(self, handle: Handle, offset: int, final: bool = False) -> tuple[bytes, int]:
        return read_lines(handle.data["log_path"], offset, final)


def _start_time(pid: int) -> int | None:
    """The process's start time in clock ticks: tells a reused pid from ours."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def _alive(pid: int, start_time: int | None) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    current = _start_time(pid)
    if start_time is not None and current is not None and current != start_time:
        return False  # the pid was reused by another process
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state != "Z"


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _killpg(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
