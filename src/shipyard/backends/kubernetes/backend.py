"""Trials as Kubernetes Jobs (docs/backends/kubernetes.md).

One run is one Job per rank group (manifests.py), on a cluster reached through the official
client (api.py) or played by Podman on the master's machine (podman.py). The run's state is
its Pods' states: all succeeded, it exited 0; one failed, the run exited with that code (the
other groups are stopped: a gang lives and dies as one); one taken by the cluster (evicted,
preempted), the run is PREEMPTED and resumes from its checkpoint. The Pods' output is
mirrored into the run's log file, group by group, with each group's offset kept beside it
so a restarted master neither loses nor repeats a line; a run that sends its output to the
master itself (sharing nothing) and fails has the tail of its failed Pod's log in its reason
(the master masks it): its entry may have failed before it could send anything.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from shipyard.backends.base import (
    Backend,
    Handle,
    LogSource,
    NeedsImage,
    RunState,
    RunStatus,
    Slot,
    TrialLaunchSpec,
    numbered_slots,
    signal_as_negative,
)
from shipyard.backends.health import BackgroundProbe
from shipyard.backends.kubernetes.cluster import Cluster, ClusterError, PodState
from shipyard.backends.kubernetes.options import KubernetesOptions
from shipyard.backends.logfile import LogMirror, Source, read_lines

log = logging.getLogger(__name__)

HEALTH_MAX_AGE_S = 5.0
GANG_GRACE_S = 10.0  # the other groups of a gang whose group failed get this to end
_EXIT_CANNOT_START = 127
_EXIT_KILLED = -9  # as the local backend records a SIGKILL
# What of a failed Pod's log a run that ships its own output gets in its reason.
TAIL_LINES = 20
TAIL_BYTES = 4096


class KubernetesBackend(Backend, LogSource, NeedsImage):
    name = "kubernetes"

    def __init__(
        self,
        options: KubernetesOptions,
        pool: str,
        engine_env: Mapping[str, str] | None = None,
    ) -> None:
        self.options = options
        self.pool = pool
        self._lock = threading.Lock()
        self._verdicts: dict[str, RunState] = {}  # ended runs: poll is idempotent and cheap
        self._terminated: set[str] = set()
        self._logs = LogMirror()  # a Pod's log is read whole
        self._slots: list[Slot] = []
        self._problem: str | None = None  # why there is no cluster object at all
        self.cluster: Cluster | None = None
        try:
            self.cluster = _make_cluster(options, engine_env)
        except ClusterError as exc:
            self._problem = str(exc)
        except ImportError as exc:  # the pool waits; the rest of the master works
            self._problem = (
                f"the kubernetes client is not installed ({exc}): "
                "pip install 'shipyard[kubernetes]'"
            )
        self._health = BackgroundProbe(
            self._ask_health, self._problem, max_age_s=HEALTH_MAX_AGE_S, name=f"k8s-{pool}"
        )
        self._health.check()  # once now, as the master starts; then in the background
        self._count_slots()

    # -- capacity and health -----------------------------------------------------------------

    def _count_slots(self) -> None:
        if self.cluster is None or self._slots:
            return
        try:
            count = self.cluster.slot_count(self.options.slot_type, self.options.gpu_resource)
        except ClusterError as exc:
            log.warning("Kubernetes pool %r: cannot count its slots: %s", self.pool, exc)
            return
        device = f"kubernetes:{self.options.namespace}"
        self._slots = numbered_slots(self.options.slot_type, count, device)

    def capacity(self) -> list[Slot]:
        if not self._slots:
            self._count_slots()
        return list(self._slots)

    def health(self) -> str | None:
        """The last check's verdict; a stale one is checked again in the background, so a
        slow API server never blocks the master."""
        return self._health.get()

    def _ask_health(self) -> str | None:
        if self.cluster is None:
            return self._problem
        problem = self.cluster.health()
        if problem != self._health.last:
            log.warning("Kubernetes pool %r: %s", self.pool, problem or "answers again")
        return problem

    def _require_cluster(self) -> Cluster:
        if self.cluster is None:
            raise ClusterError(self._problem or "no Kubernetes cluster")
        return self.cluster

    # -- running -----------------------------------------------------------------------------

    def shares_masters_files(self, slots: list[Slot]) -> bool:
        return self.options.shares_masters_files()

    def launch(self, spec: TrialLaunchSpec) -> Handle:
        cluster = self._require_cluster()
        from shipyard.backends.kubernetes.manifests import build  # the client: imported here

        manifests = build(
            spec,
            self.options,
            rendezvous=cluster.rendezvous,
            host_network=self.options.host_network or cluster.needs_host_network,
        )
        log_path = spec.log_path or str(Path(spec.workdir) / "trial.log")
        if spec.shares_files:  # else the run sends its output to the master itself
            self._logs.start(log_path)  # a run of the same name from before: start clean
        cluster.create(manifests)
        engine = "podman kube play" if self.options.engine == "podman" else "kubernetes"
        return Handle(
            self.name,
            {
                "kubernetes": {
                    "run": manifests.name,
                    "groups": len(manifests.jobs),
                    "log_path": log_path,
                    # the run sends its output to the master itself (shipyard.launch.entry)
                    "ships_logs": not spec.shares_files,
                },
                Handle.ENVIRONMENT: {
                    "engine": engine,
                    "namespace": self.options.namespace,
                    "image": spec.image,
                    "jobs": [job["metadata"]["name"] for job in manifests.jobs],
                },
            },
        )

    def poll(self, handle: Handle) -> RunState:
        run = _run(handle)
        with self._lock:
            if run in self._verdicts:
                return self._verdicts[run]
        try:
            pods = self._require_cluster().pods(run)
        except ClusterError as exc:
            log.warning("Kubernetes pool %r: cannot see run %s: %s", self.pool, run, exc)
            return RunState(RunStatus.RUNNING)  # unknown: asked again at the next poll
        info = handle.data["kubernetes"]
        ended = self._verdict(run, pods, info["groups"])
        if ended is None:
            return RunState(RunStatus.RUNNING)
        verdict, culprit = ended
        if pods and any(p.phase in ("Pending", "Running") for p in pods):
            self._require_cluster().stop(run, GANG_GRACE_S)  # the gang ends as one
        if culprit is not None and info.get("ships_logs") and run not in self._terminated:
            verdict = self._with_last_output(run, culprit, verdict)
        with self._lock:
            self._verdicts[run] = verdict
        return verdict

    def _verdict(
        self, run: str, pods: list[PodState] | None, groups: int
    ) -> tuple[RunState, PodState | None] | None:
        """The run's end and the Pod that failed it (if one did), or None while it runs."""
        if pods is None:
            if run in self._terminated:  # killed after the grace: the Pods went with it
                return RunState(RunStatus.EXITED, _EXIT_KILLED), None
            lost = RunState(RunStatus.LOST, reason="the cluster no longer has the run's Pods")
            return lost, None
        for pod in pods:
            if pod.preempted:
                return RunState(RunStatus.PREEMPTED, reason=pod.preempted), None
        for pod in pods:
            if pod.cannot_start:
                return RunState(RunStatus.EXITED, _EXIT_CANNOT_START, reason=pod.cannot_start), pod
        failed = [p for p in pods if p.phase == "Failed"]
        if failed:
            code = failed[0].exit_code  # the container runtime's: 128 + N for signal N
            exit_code = _EXIT_KILLED if code is None else signal_as_negative(code)
            return RunState(RunStatus.EXITED, exit_code), failed[0]
        if len(pods) == groups and all(p.phase == "Succeeded" for p in pods):
            return RunState(RunStatus.EXITED, 0), None
        return None

    def _with_last_output(self, run: str, pod: PodState, verdict: RunState) -> RunState:
        """The verdict of a failed run that sends its output to the master itself, with the
        last lines of its failed Pod's log: what its entry printed if it failed before it
        could send anything (no Shipyard in the image, no python3, no master) reaches no
        log file. Unchanged when the log cannot be read."""
        try:
            tail = self._require_cluster().logs(run, pod.group, tail=TAIL_LINES)
        except ClusterError as exc:
            # A warning: the run's end then says less than it could about why it failed.
            log.warning(
                "Kubernetes pool %r: cannot read the log of run %s: %s", self.pool, run, exc
            )
            return verdict
        text = _last_bytes(tail, TAIL_BYTES).strip()
        if not text:
            log.info("Kubernetes pool %r: run %s's failed Pod printed nothing", self.pool, run)
        return dataclasses.replace(verdict, last_output=text) if text else verdict

    def terminate(self, handle: Handle, grace_s: float) -> None:
        run = _run(handle)
        with self._lock:
            self._terminated.add(run)
        self._require_cluster().stop(run, grace_s)

    def release(self, handle: Handle) -> None:
        info = handle.data["kubernetes"]
        try:
            if not info.get("ships_logs"):  # the Pods' logs go with them: copy them first
                self._mirror(info["run"], info["groups"], info["log_path"], final=True)
            self._require_cluster().remove(info["run"])
        except ClusterError as exc:
            log.warning("Kubernetes pool %r: %s", self.pool, exc)

    def recover(self, handle_data: dict[str, Any]) -> Handle | None:
        info = handle_data.get("kubernetes") or {}
        if "run" not in info:
            return None
        try:
            pods = self._require_cluster().pods(info["run"])
        except ClusterError:
            pods = []  # cannot tell now: keep the handle, poll asks again
        return None if pods is None else Handle(self.name, dict(handle_data))

    def close(self) -> None:
        self._health.close()
        if self.cluster is not None:
            self.cluster.close()

    # -- output ------------------------------------------------------------------------------

    def read_output(self, handle: Handle, offset: int, final: bool = False) -> tuple[bytes, int]:
        info = handle.data["kubernetes"]
        if info.get("ships_logs"):
            return b"", offset
        self._mirror(info["run"], info["groups"], info["log_path"], final)
        return read_lines(info["log_path"], offset, final)

    def _mirror(self, run: str, groups: int, log_path: str, final: bool) -> None:
        """Append what each group's Pod printed since the last time to the run's log."""
        self._logs.copy_lines(log_path, [self._pod_log(run, g) for g in range(groups)], final)

    def _pod_log(self, run: str, group: int) -> Source:
        """The log of the run's Pod of this group, from an offset on."""

        def read(offset: int) -> bytes | None:
            try:
                return self._require_cluster().logs(run, group)[offset:]
            except ClusterError:
                return None

        return read


def _run(handle: Handle) -> str:
    return handle.data["kubernetes"]["run"]


def _last_bytes(data: bytes, limit: int) -> str:
    """At most ``limit`` bytes of the end of ``data``, from a line's start if it was cut."""
    if len(data) <= limit:
        return data.decode(errors="replace")
    cut = data[-limit:]
    newline = cut.find(b"\n")
    return (cut[newline + 1 :] if newline >= 0 else cut).decode(errors="replace")


def _make_cluster(options: KubernetesOptions, engine_env: Mapping[str, str] | None) -> Cluster:
    if options.engine == "podman":
        from shipyard.backends.kubernetes.podman import PodmanCluster

        return PodmanCluster(engine_env, network=options.network)
    from shipyard.backends.kubernetes.api import ApiCluster

    return ApiCluster(options)
