"""Trials on a Ray cluster (docs/backends/ray.md).

One trial run is one detached, named Ray actor (runner.py) holding a placement group of the
trial's slots on one node; it unpacks the trial's code (shipped from the master as tar.gz)
and runs the trial's argv once, so a multi-slot trial's launcher starts its ranks there.
With placement_strategy SPREAD/STRICT_SPREAD (or PACK when no node holds the whole trial)
the placement group has several bundles (placement.py), one actor each, and each actor runs
the argv as one node of the launchers' multi-node contract (launch/_nodes.py): the run is
the gang of those actors ("members"), polled, stopped and mirrored as one.

The master never imports Ray: a Ray driver exits when its cluster goes away, and connecting
to a dead address hangs for minutes. This backend talks to a driver child process
(driver.py) instead, restarts it with backoff when it dies, and never lets the cluster's
trouble raise into the master's loops: while the cluster does not answer, health() says why,
new trials of the pool wait, and running ones are reported RUNNING (unknown yet) until it
answers again or ``lost_after_s`` passes, when they are LOST and restarted from their
checkpoints.

A run's output is written on its node and mirrored, as it is read, to ``spec.log_path`` on
the master; the exit code is a file on the node too, so both outlive the actor, which is
killed as soon as the exit is known (that frees the slots).

A trial with an environment.image runs in `podman run` of it, started by its actor on the
node (images.py), not in Ray's own image_uri containers.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
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
    numbered_slots,
)
from shipyard.backends.logfile import LogMirror, Source, read_lines
from shipyard.backends.ray import images, protocol
from shipyard.backends.ray.client import DriverProcess, DriverUnavailable, RemoteError
from shipyard.backends.ray.options import RayOptions
from shipyard.backends.ray.runner import MAX_READ
from shipyard.common.errors import NotSupportedYet

log = logging.getLogger(__name__)

_BACKOFF_S = (1.0, 2.0, 5.0, 10.0, 30.0)  # between attempts to start the driver again
_PING_EVERY_S = 5.0  # health() asks the cluster at most this often (in the background)
_GANG_GRACE_S = 10.0  # the launchers' default: SIGTERM to the other nodes, SIGKILL after
_MEMBER_KEYS = ("actor", "node_id", "log", "exit_file")


class RayBackend(Backend, LogSource, RunsImages):
    name = "ray"

    def __init__(self, options: RayOptions, pool: str) -> None:
        self.options = options
        self.pool = pool
        self._lock = threading.Lock()
        self._driver: DriverProcess | None = None
        self._problem: str | None = None
        self._failures = 0
        self._next_try = 0.0
        self._last_ok = 0.0
        self._worker: threading.Thread | None = None  # a background connect or ping
        self._closed = False
        self._slots: list[Slot] = []
        self._verdicts: dict[str, RunState] = {}  # ended runs: poll stays idempotent
        self._unknown_since: dict[str, float] = {}  # runs whose cluster does not answer
        self._logs = LogMirror(window=MAX_READ)  # a node's log is read in windows
        self._connect()  # bounded; never raises: an unreachable cluster is a health problem

    # -- the driver process ------------------------------------------------------------------

    def _connect(self) -> None:
        driver = DriverProcess(self.options.address, self.options.namespace, self.options.timeout_s)
        try:
            driver.wait_ready(self.options.timeout_s + 5)
        except DriverUnavailable as exc:
            driver.close()
            self._failed(str(exc))
            return
        with self._lock:
            old, self._driver = self._driver, driver
            self._failures = 0
        if old is not None:
            old.close()
        self._ok()
        self._refresh_slots()

    def _failed(self, why: str) -> None:
        with self._lock:
            problem = f"Ray cluster at {self.options.address} does not answer: {why}"
            changed = problem != self._problem
            self._problem = problem
            self._next_try = time.monotonic() + _BACKOFF_S[min(self._failures, 4)]
            self._failures += 1
        if changed:
            log.warning("Ray pool %r: %s", self.pool, problem)

    def _ok(self) -> None:
        with self._lock:
            was, self._problem = self._problem, None
            self._last_ok = time.monotonic()
        if was:
            log.warning("Ray pool %r: the cluster answers again", self.pool)

    def _in_background(self, target) -> None:
        with self._lock:
            if self._closed or (self._worker is not None and self._worker.is_alive()):
                return
            self._worker = threading.Thread(target=target, daemon=True, name=f"ray-{self.pool}")
            self._worker.start()

    def _call(self, op: str, timeout: float | None = None, **args: Any) -> Any:
        """The driver's answer; DriverUnavailable when there is none (and a restart of the
        driver is started in the background once the backoff allows)."""
        with self._lock:
            driver = self._driver
        if driver is None or not driver.alive:
            if driver is not None:
                self._failed(driver.dead_reason or "the driver process exited")
                with self._lock:
                    self._driver = None
            if time.monotonic() >= self._next_try:
                self._in_background(self._connect)
            raise DriverUnavailable(self._problem or "not connected yet")
        try:
            result = driver.call(op, timeout or self.options.timeout_s, **args)
        except DriverUnavailable as exc:
            self._failed(str(exc))
            raise
        self._ok()
        return result

    def health(self) -> str | None:
        """The last verdict; a stale one is checked again in the background (never blocks)."""
        with self._lock:
            stale = time.monotonic() - self._last_ok > _PING_EVERY_S
        if stale:
            self._in_background(self._ping)
        return self._problem

    def _ping(self) -> None:
        try:
            self._call("ping")
            if not self._slots:
                self._refresh_slots()
        except (DriverUnavailable, RemoteError):
            pass

    # -- capacity ----------------------------------------------------------------------------

    def _refresh_slots(self) -> None:
        try:
            answer = self._call("capacity", slot_type=self.options.slot_type)
        except (DriverUnavailable, RemoteError) as exc:
            log.warning("Ray pool %r: cannot read the cluster's resources: %s", self.pool, exc)
            return
        kind = self.options.slot_type
        device = f"ray:{self.options.address}"
        with self._lock:
            self._slots = numbered_slots(kind, answer["total"], device)
            if not self._slots:
                self._problem = f"the Ray cluster at {self.options.address} has no {kind.upper()}s"

    def capacity(self) -> list[Slot]:
        return list(self._slots)

    # -- launching ---------------------------------------------------------------------------

    def launch(self, spec: TrialLaunchSpec) -> Handle:
        count = len(spec.slots)
        actor = f"shipyard-{self.pool}-trial-{spec.trial_id}-run-{spec.run_id}"
        mirror = str(Path(spec.log_path or Path(spec.workdir) / "trial.log"))
        image: dict[str, Any] | None = None
        in_image: dict[str, str] = {}  # what the run records of its image
        if spec.image:  # ContainerError (no such image, no podman) fails the launch
            image, in_image = images.prepare(spec, self.options.containers)
        self._logs.start(mirror)  # the node's log is copied here from offset 0
        args = {
            "actor": actor,
            "pg": f"{actor}-slots",
            "trial_id": spec.trial_id,
            "run_id": spec.run_id,
            "token": uuid.uuid4().hex[:8],
            "argv": spec.argv,
            "env": spec.env,
            "workdir": spec.workdir,
            "skip": [mirror],
            "config_path": spec.env.get("SHIPYARD_EXPERIMENT_CONFIG"),
            "slot_kind": self.options.slot_type,
            "slots": count,
            "wait_s": self.options.timeout_s,
            "work_root": self.options.work_root,
            "pool": self.pool,
            "max_code_bytes": int(self.options.max_code_mb * 1e6),
            "placement_strategy": self.options.placement_strategy,
            "image": image,
        }
        started = time.monotonic()
        try:
            info = self._call("launch", timeout=3 * self.options.timeout_s + 10, **args)
        except DriverUnavailable as exc:
            raise RuntimeError(f"the Ray pool {self.pool!r} cannot launch now: {exc}") from exc
        except RemoteError as exc:
            if exc.kind == "NotSupportedYet":
                raise NotSupportedYet(str(exc)) from exc
            raise RuntimeError(f"the Ray pool {self.pool!r} could not launch: {exc}") from exc
        members = info["members"]
        first = members[0]
        log.info(
            "trial %s run %s is Ray actor(s) %s on node(s) %s (%.2f s)",
            spec.trial_id, spec.run_id, ", ".join(m["actor"] for m in members),
            ", ".join(m["node_id"] for m in members), time.monotonic() - started,
        )  # fmt: skip
        environment: dict[str, Any] = {
            "ray_address": self.options.address,
            "node_id": first["node_id"],
            "actor": first["actor"],
            **in_image,
        }
        data = {
            "actor": actor,  # the run's name (its key), and member 0's fields, as for one node
            "pg": f"{actor}-slots",
            "node_id": first["node_id"],
            "log": first["log"],
            "exit_file": first["exit_file"],
            "log_path": mirror,
            "worker_pid": first["worker_pid"],
            "cwd": first["cwd"],
            Handle.ENVIRONMENT: environment,
        }
        if len(members) > 1:
            data["members"] = [
                {k: m[k] for k in (*_MEMBER_KEYS, "worker_pid", "cwd")} for m in members
            ]
            data["grace_s"] = _grace_s(spec.env)
            environment.update(
                placement_strategy=self.options.placement_strategy,
                nodes=len(members),
                node_ids=[m["node_id"] for m in members],
                actors=[m["actor"] for m in members],
            )
        return Handle(backend=self.name, data=data)

    # -- polling and stopping ------------------------------------------------------------------

    def _members(self, handle: Handle) -> list[dict[str, Any]]:
        """The run's actors: a one-node run's handle holds its one actor's fields itself."""
        members = handle.data.get("members") or [handle.data]
        return [{k: m[k] for k in _MEMBER_KEYS} for m in members]

    def _where(self, handle: Handle) -> dict[str, Any]:
        return {
            "key": handle.data["actor"],
            "pg": handle.data["pg"],
            "members": self._members(handle),
            "grace_s": handle.data.get("grace_s", _GANG_GRACE_S),
        }

    def poll(self, handle: Handle) -> RunState:
        actor = handle.data["actor"]
        if actor in self._verdicts:
            return self._verdicts[actor]
        try:
            answer = self._call("poll", **self._where(handle))
        except (DriverUnavailable, RemoteError) as exc:
            return self._unknown(actor, str(exc))
        self._unknown_since.pop(actor, None)
        if answer["status"] == "RUNNING":
            return RunState(RunStatus.RUNNING)
        state = RunState(RunStatus(answer["status"]), answer.get("code"), answer.get("reason"))
        self._verdicts[actor] = state
        return state

    def _unknown(self, actor: str, why: str) -> RunState:
        """The cluster does not answer: RUNNING (it may be) until lost_after_s has passed."""
        since = self._unknown_since.setdefault(actor, time.monotonic())
        if time.monotonic() - since < self.options.lost_after_s:
            return RunState(RunStatus.RUNNING)
        reason = f"the Ray cluster did not answer for {self.options.lost_after_s:.0f} s: {why}"
        return RunState(RunStatus.LOST, reason=reason)

    def terminate(self, handle: Handle, grace_s: float) -> None:
        try:
            self._call("terminate", members=self._members(handle), grace_s=grace_s)
        except (DriverUnavailable, RemoteError) as exc:
            log.warning("cannot stop Ray actor %s now: %s", handle.data["actor"], exc)

    def release(self, handle: Handle) -> None:
        """Copy the rest of the output, then kill the actor and free its slots."""
        self._mirror(handle, final=True)
        try:
            self._call("release", members=self._members(handle), pg=handle.data.get("pg"))
        except (DriverUnavailable, RemoteError) as exc:
            log.warning("cannot release Ray actor %s now: %s", handle.data["actor"], exc)

    def recover(self, handle_data: dict[str, Any]) -> Handle | None:
        if "actor" not in handle_data:
            return None
        handle = Handle(backend=self.name, data=dict(handle_data))
        try:
            found = self._call("recover", **self._where(handle))["found"]
        except DriverUnavailable:
            return handle  # unknown yet: poll says RUNNING until the cluster answers
        except RemoteError as exc:
            log.warning("cannot recover Ray actor %s: %s", handle_data["actor"], exc)
            return None
        return handle if found else None

    # -- output ------------------------------------------------------------------------------

    def read_output(self, handle: Handle, offset: int, final: bool = False) -> tuple[bytes, int]:
        self._mirror(handle, final)
        return read_lines(handle.data["log_path"], offset, final)

    def _mirror(self, handle: Handle, final: bool) -> None:
        """Append what the node's log has beyond the master's copy (all of it when final).
        Several nodes: whole lines of each, their offsets kept beside the copy."""
        mirror = handle.data["log_path"]
        sources = [self._node_log(member) for member in self._members(handle)]
        if len(sources) == 1:
            self._logs.copy_bytes(mirror, sources[0], final)
        else:
            self._logs.copy_lines(mirror, sources, final)

    def _node_log(self, member: dict[str, Any]) -> Source:
        """The member's log on its node, read through the driver."""

        def read(offset: int) -> bytes | None:
            try:
                answer = self._call("read_log", member=member, offset=offset)
            except (DriverUnavailable, RemoteError):
                return None
            return protocol.from_b64(answer["data"])

        return read

    def close(self) -> None:
        with self._lock:
            self._closed = True
            driver, self._driver = self._driver, None
        if driver is not None:
            driver.close()


def _grace_s(env: dict[str, str]) -> float:
    """The gang's grace (SHIPYARD_GANG_GRACE_S, as the launchers read it) for stopping the
    other nodes when one fails."""
    try:
        value = float(env.get("SHIPYARD_GANG_GRACE_S", ""))
    except ValueError:
        return _GANG_GRACE_S
    return value if value >= 0 else _GANG_GRACE_S
