"""The cluster as Podman on the master's machine: each Job's Pod is played with
`podman kube play`, the same Pod spec an API server would get. What Podman does not have
(Jobs, Services, a scheduler) is not used: the Pods share the host's network, so group 0 is
found on 127.0.0.1, or they join a Podman network (`network:`), where Podman's DNS answers
group 0's Pod name. Used by the tests and for one machine without a cluster."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import tempfile
import threading
from collections.abc import Mapping

import yaml

from shipyard.backends.kubernetes.cluster import (
    GROUP_LABEL,
    RENDEZVOUS_PORT,
    RUN_LABEL,
    Cluster,
    ClusterError,
    PodState,
    RunManifests,
)
from shipyard.backends.kubernetes.manifests import CONTAINER, pod_of, secret_name
from shipyard.backends.local.gpus import detect_gpus
from shipyard.common.ports import free_ports

log = logging.getLogger(__name__)

_TIMEOUT_S = 60.0
_PHASES = {"created": "Pending", "configured": "Pending", "initialized": "Pending"}


class PodmanCluster(Cluster):
    def __init__(
        self, engine_env: Mapping[str, str] | None = None, *, network: str | None = None
    ) -> None:
        self.env = {**os.environ, **(engine_env or {})}
        self._stopping: list[threading.Thread] = []
        # Without a network of their own, the Pods use the host's: the master is on
        # 127.0.0.1, and so is group 0 of a gang.
        self.network = network
        self.needs_host_network = network is None

    def _podman(
        self, *args: str, stdin: str | None = None, timeout_s: float = _TIMEOUT_S
    ) -> subprocess.CompletedProcess:
        try:
            return subprocess.run(
                ["podman", *args],
                input=stdin,
                capture_output=True,
                text=True,
                env=self.env,
                timeout=timeout_s,
                stdin=None if stdin is not None else subprocess.DEVNULL,
            )
        except FileNotFoundError as exc:
            raise ClusterError("`podman` is not on the master's PATH") from exc
        except subprocess.TimeoutExpired as exc:
            raise ClusterError(f"`podman {args[0]}` did not answer in {timeout_s:.0f} s") from exc

    def health(self) -> str | None:
        try:
            result = self._podman("version", "--format", "{{.Client.Version}}")
        except ClusterError as exc:
            return str(exc)
        return None if result.returncode == 0 else f"podman does not answer: {result.stderr}"

    def slot_count(self, slot_type: str, gpu_resource: str) -> int:
        return len(detect_gpus()) if slot_type == "gpu" else os.cpu_count() or 1

    def rendezvous(self, run: str) -> tuple[str, int]:
        if self.network is not None:
            # Podman's DNS on the network (aardvark-dns) answers a Pod's name, as a headless
            # Service answers group 0's in a cluster; the port is in its network namespace.
            return f"{run}-g0", RENDEZVOUS_PORT
        return "127.0.0.1", free_ports(2, "127.0.0.1", consecutive=True)[0]

    def create(self, manifests: RunManifests) -> None:
        if manifests.secret is not None:
            self._create_secret(manifests.secret)
        pods = [pod_of(job) for job in manifests.jobs]
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            yaml.safe_dump_all(pods, f)  # mode 0600: the environment may hold secrets
        try:
            network = ["--network", self.network] if self.network else []
            result = self._podman("kube", "play", *network, f.name)
        finally:
            os.unlink(f.name)
        if result.returncode != 0:
            self.remove(manifests.name)
            raise ClusterError(f"podman kube play failed: {result.stderr.strip()}")

    def pods(self, run: str) -> list[PodState] | None:
        result = self._podman(
            "ps", "-a", "--filter", f"label={RUN_LABEL}={run}", "--format", "json"
        )
        if result.returncode != 0:
            raise ClusterError(f"podman ps failed: {result.stderr.strip()}")
        found = [c for c in json.loads(result.stdout or "[]") if _is_trial(c)]
        if not found:
            return None
        return sorted((_state(c) for c in found), key=lambda p: p.group)

    def stop(self, run: str, grace_s: float) -> None:
        """The trial containers first, then the Pods, as the kubelet stops a Pod: the infra
        container is PID 1 of the shared PID namespace, and its end would SIGKILL the trial
        at once. In the background: `stop -t` waits, and stop returns at once."""
        pods = self._pod_names(run)
        trials = [f"{pod}-{CONTAINER}" for pod in pods]
        grace = max(0, round(grace_s))

        def stop_in_order() -> None:
            try:
                self._podman(
                    "stop", "--ignore", "-t", str(grace), *trials, timeout_s=grace + _TIMEOUT_S
                )
                self._podman("pod", "stop", "-t", "0", *pods)
            except ClusterError as exc:  # remove() deletes what is left when the run ends
                log.warning("cannot stop run %s: %s", run, exc)

        thread = threading.Thread(target=stop_in_order, daemon=True, name=f"podman-stop-{run}")
        thread.start()
        self._stopping = [t for t in self._stopping if t.is_alive()] + [thread]

    def remove(self, run: str) -> None:
        pods = self._pod_names(run)
        if pods:
            self._podman("pod", "rm", "-f", "-t", "0", *pods)
        self._podman("secret", "rm", secret_name(run))  # quiet when the run had none

    def _create_secret(self, secret: dict) -> None:
        """`kube play` of a Secret stores what Podman 4.3's own Pods cannot read back; a
        Podman secret whose content is the JSON of the Secret's data (key -> base64) is what
        a secretKeyRef reads."""
        name = secret["metadata"]["name"]
        self._podman("secret", "rm", name)  # one of a run by that name from before
        result = self._podman("secret", "create", name, "-", stdin=json.dumps(secret["data"]))
        if result.returncode != 0:
            raise ClusterError(f"podman secret create failed: {result.stderr.strip()}")

    def logs(self, run: str, group: int, tail: int | None = None) -> bytes:
        # stderr into the same pipe: one stream, as the API's log has it.
        last = [] if tail is None else ["--tail", str(tail)]
        try:
            result = subprocess.run(
                ["podman", "logs", *last, f"{run}-g{group}-{CONTAINER}"],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=self.env,
                timeout=_TIMEOUT_S,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired as exc:
            raise ClusterError("`podman logs` did not answer") from exc
        if result.returncode != 0:  # the output is podman's complaint, not the trial's
            raise ClusterError(f"podman logs failed: {result.stdout.decode(errors='replace')}")
        return result.stdout

    def close(self) -> None:
        for thread in self._stopping:
            thread.join(timeout=_TIMEOUT_S)

    def _pod_names(self, run: str) -> list[str]:
        result = self._podman(
            "pod", "ps", "--filter", f"label={RUN_LABEL}={run}", "--format", "{{.Name}}"
        )
        return result.stdout.split() if result.returncode == 0 else []


def _is_trial(container: dict) -> bool:
    return any(name.endswith(f"-{CONTAINER}") for name in container.get("Names") or [])


def _state(container: dict) -> PodState:
    labels = container.get("Labels") or {}
    status = str(container.get("State", "")).lower()
    exit_code = container.get("ExitCode") if status in ("exited", "stopped") else None
    if exit_code is not None:
        phase = "Succeeded" if exit_code == 0 else "Failed"
    else:
        phase = _PHASES.get(status, "Running" if status == "running" else "Unknown")
    return PodState(
        group=int(labels.get(GROUP_LABEL, 0)),
        phase=phase,
        exit_code=exit_code,
        name=(container.get("Names") or [""])[0],
    )
