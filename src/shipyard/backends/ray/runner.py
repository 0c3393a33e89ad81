"""What runs on a Ray node: the trial's actor (one detached, named actor per run) and the
small functions that read a run's files on its node after the actor is gone.

The actor starts the trial in ``start()`` (an error in an actor's ``__init__`` kills it with
a core dump) through keeper.py, which takes the trial's process group down if the actor's
worker dies. The run's output and exit code are files on the node, so they outlive the
actor: the driver kills the actor as soon as the exit is known (it frees the run's slots),
and reads what is left with a task pinned to the node (`read_file`).

A trial with an image runs as `podman run` of it under the keeper (images.py). Podman's
monitor keeps the container outside the keeper's process group: a SIGTERM reaches it through
the podman CLI, but after a SIGKILL the container is removed by name.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shipyard.backends.base import signal_as_negative
from shipyard.backends.ray import keeper, payload
from shipyard.common.determined_shim import with_shim
from shipyard.common.files import read_from, read_int, write_atomically
from shipyard.common.ports import free_ports

if TYPE_CHECKING:
    from shipyard.backends.ray.images import NodeContainer

MAX_READ = 1 << 20


def run_dir(
    work_root: str | None, namespace: str, pool: str, trial_id: int, node_rank: int | None = None
) -> Path:
    """A run's directory on its node; a multi-node gang's actors get one each (node-<k>), as
    two of them may share a machine and must not unpack over each other's code."""
    root = Path(work_root or Path(tempfile.gettempdir()) / "shipyard-ray")
    base = root / namespace / pool / f"trial-{trial_id}"
    return base if node_rank is None else base / f"node-{node_rank}"


class TrialRunner:
    """A Ray actor class (the driver applies ray.remote): one trial run on one node."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen | None = None
        self._exit_file: Path | None = None
        self._log_path: Path | None = None
        self._container: NodeContainer | None = None  # a trial with an image's
        self._lock = threading.Lock()

    def start(self, spec: dict[str, Any]) -> dict[str, Any]:
        """Unpack the code and start the trial; returns where it runs."""
        import ray  # only on the node: the module is also imported by the driver

        base = run_dir(
            spec["work_root"],
            spec["namespace"],
            spec["pool"],
            spec["trial_id"],
            spec.get("node_rank"),
        )
        code_dir = base / "code"
        payload.unpack(spec["code"], str(code_dir))
        # The launch's own token: a run relaunched under the same name never reads the files
        # of an earlier one.
        run = f"{spec['run_id']}-{spec['token']}"
        self._log_path = base / f"run-{run}.log"
        self._exit_file = base / f"run-{run}.exit"
        self._exit_file.unlink(missing_ok=True)
        env = dict(spec["env"])
        if spec.get("config") is not None:
            config_file = base / f"run-{run}.config.json"
            config_file.write_bytes(spec["config"])
            env["SHIPYARD_EXPERIMENT_CONFIG"] = str(config_file)
        env["SHIPYARD_SLOT_IDS"] = ",".join(_slot_ids(spec["slot_kind"], spec["slots"]))
        if spec["slot_kind"] == "gpu":
            env["CUDA_VISIBLE_DEVICES"] = os.environ.get("CUDA_VISIBLE_DEVICES", "")
        node_id = ray.get_runtime_context().get_node_id()
        env["SHIPYARD_RAY_NODE_ID"] = node_id  # where the trial runs, for its own logs
        argv = spec["argv"]
        if spec.get("image"):
            argv, env = self._in_image(spec, env, code_dir, base / f"run-{run}")
        else:  # this node's install, which may not be where the master's is
            with_shim(env)
        # Started and waited for by a thread of its own: the keeper's PR_SET_PDEATHSIG fires
        # when the thread that forked it ends, and Ray's call threads are not ours to keep.
        started = threading.Event()
        failure: list[BaseException] = []
        threading.Thread(
            target=self._run, args=(argv, code_dir, env, started, failure), daemon=True
        ).start()
        started.wait()
        if failure:
            raise failure[0]
        assert self._proc is not None
        return {
            "node_id": node_id,
            "worker_pid": os.getpid(),
            "pid": self._proc.pid,
            "cwd": str(code_dir),
            "log": str(self._log_path),
            "exit_file": str(self._exit_file),
        }

    def _in_image(
        self, spec: dict[str, Any], env: dict[str, str], code_dir: Path, run_file: Path
    ) -> tuple[list[str], dict[str, str]]:
        """The keeper's argv and environment for the trial in its image: podman's."""
        from shipyard.backends.ray import images  # pydantic and friends: image runs only

        gpus = _cuda_devices() if spec["slot_kind"] == "gpu" else []
        self._container = container = images.on_node(
            spec["image"], spec, env, code_dir, run_file, gpus
        )
        # If the actor's worker dies, the keeper removes the container before its group.
        remove = container.runtime.remove_argv(container.name)
        return container.argv, {**container.cli_env, keeper.CLEANUP_ENV: json.dumps(remove)}

    def _remove_container(self) -> None:
        """After a SIGKILL to the podman CLI: its container would run on (quiet if gone)."""
        if self._container is not None:
            self._container.runtime.remove(self._container.name)

    def _run(self, argv, cwd, env, started: threading.Event, failure: list) -> None:
        assert self._log_path is not None and self._exit_file is not None
        try:
            with open(self._log_path, "ab") as out:
                self._proc = subprocess.Popen(
                    [sys.executable, keeper.__file__, *argv],
                    cwd=cwd,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # the keeper leads the trial's process group
                )
        except BaseException as exc:  # noqa: BLE001 - handed to start()
            failure.append(exc)
            return
        finally:
            started.set()
        code = self._proc.wait()
        if self._container is not None:  # its variables, read at the start: kept no longer
            self._container.env_file.unlink(missing_ok=True)
        # -N: the keeper itself died of signal N; 128 + N: the trial did (the keeper's exit).
        code = signal_as_negative(code)
        write_atomically(self._exit_file, f"{code}\n")

    def rendezvous(self) -> str:
        """For node 0 of a multi-node gang: "ip:port" with this node's IP as the other nodes
        reach it and a port p with p and p + 1 free here (the launchers' contract: torch's
        MASTER_PORT and Shipyard's coordinator)."""
        import ray

        return f"{ray.util.get_node_ip_address()}:{free_ports(2, consecutive=True)[0]}"

    def poll(self) -> int | None:
        """The exit code once the trial ended (and is recorded on the node), else None."""
        assert self._exit_file is not None
        return read_int(self._exit_file)

    def read_log(self, offset: int) -> tuple[int, bytes]:
        assert self._log_path is not None
        return read_file(str(self._log_path), offset)

    def terminate(self, grace_s: float) -> None:
        """SIGTERM to the trial's group, SIGKILL after the grace; returns at once."""
        assert self._proc is not None
        proc = self._proc
        _killpg(proc.pid, signal.SIGTERM)

        def escalate() -> None:
            try:
                proc.wait(grace_s)
            except subprocess.TimeoutExpired:
                pass
            # The container first: its exit, written once the group is gone, frees the slots.
            self._remove_container()
            _killpg(proc.pid, signal.SIGKILL)  # also ranks left behind by the keeper

        threading.Thread(target=escalate, daemon=True).start()

    def kill(self) -> int | None:
        """SIGKILL to whatever is left of the trial's group; its exit code."""
        if self._proc is None:
            return None
        self._remove_container()
        _killpg(self._proc.pid, signal.SIGKILL)
        self._proc.wait()
        return self.poll()


def _cuda_devices() -> list[str]:
    """The GPUs Ray gave this actor (it sets CUDA_VISIBLE_DEVICES to their indexes)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    return [d.strip() for d in visible.split(",") if d.strip()]


def _slot_ids(kind: str, count: int) -> list[str]:
    if kind == "gpu":  # a gpu slot id's number is the CUDA device it pins
        return [f"gpu{d}" for d in _cuda_devices()]
    return [f"cpu{i}" for i in range(count)]


def read_file(path: str, offset: int) -> tuple[int, bytes]:
    """Bytes of a node's file from offset (at most MAX_READ) and the new offset."""
    data = read_from(path, offset, MAX_READ)
    return offset + len(data), data


def read_run_files(log: str, offset: int, exit_file: str) -> tuple[int, bytes, int | None]:
    """For a task pinned to the run's node after its actor is gone."""
    new_offset, data = read_file(log, offset)
    return new_offset, data, read_int(exit_file)


def _killpg(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
