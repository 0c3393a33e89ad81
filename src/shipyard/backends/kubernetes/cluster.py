"""What the Kubernetes backend needs from a cluster, behind one small interface so the same
backend (manifests, states, logs, gang handling) runs against a real API server
(api.ApiCluster, the official client) or against Podman playing the same Pod specs
(podman.PodmanCluster, what the tests run: no API server can run on the test machines)."""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Any

# Labels on every object of a run: the run's name finds all its Jobs, Pods and Service.
RUN_LABEL = "shipyard.ai/run"
GROUP_LABEL = "shipyard.ai/rank-group"
# Where group 0 of a gang listens, in its Pod's own network namespace: the launchers bind
# this port and the next one (torch's MASTER_PORT and Shipyard's coordinator).
RENDEZVOUS_PORT = 29400


class ClusterError(Exception):
    """The cluster refused or did not answer; the message says what it said."""


@dataclass(frozen=True)
class PodState:
    """One rank group's Pod as the cluster reports it."""

    group: int
    phase: str  # Pending, Running, Succeeded, Failed, Unknown (Kubernetes' pod phases)
    exit_code: int | None = None  # the trial container's, once it terminated
    # Why the cluster took the Pod away (evicted, preempted, node lost): the run resumes
    # from its checkpoint.
    preempted: str | None = None
    # Why the Pod can never start (image cannot be pulled, bad spec): the run fails.
    cannot_start: str | None = None
    name: str = ""


@dataclass(frozen=True)
class RunManifests:
    """Everything one run creates: a Job per rank group (and a headless Service when the
    groups must find each other by name, and a Secret when it has credentials)."""

    name: str
    jobs: list[dict[str, Any]]
    service: dict[str, Any] | None = None
    # The run's credentials (task token, S3 keys, its secrets' values) as a Secret the
    # Pods' variables refer to, made before them and deleted with them.
    secret: dict[str, Any] | None = None


class Cluster(abc.ABC):
    # Pods of this cluster must use the host's network (the master is on 127.0.0.1).
    needs_host_network: bool = False

    @abc.abstractmethod
    def health(self) -> str | None:
        """None when the cluster answers, else why not."""

    @abc.abstractmethod
    def slot_count(self, slot_type: str, gpu_resource: str) -> int:
        """How many slots (GPUs, or whole CPUs) the cluster's nodes offer."""

    @abc.abstractmethod
    def rendezvous(self, run: str) -> tuple[str, int]:
        """Host and port where the other rank groups of the run find rank group 0."""

    @abc.abstractmethod
    def create(self, manifests: RunManifests) -> None:
        """Create all of the run's objects, or none (what was created is removed)."""

    @abc.abstractmethod
    def pods(self, run: str) -> list[PodState] | None:
        """The run's Pods ([] while they are being made), or None when the cluster knows
        nothing of the run."""

    @abc.abstractmethod
    def stop(self, run: str, grace_s: float) -> None:
        """SIGTERM to every Pod of the run, SIGKILL after grace_s; returns at once. The Pods
        stay, so their exit codes and logs can still be read."""

    @abc.abstractmethod
    def remove(self, run: str) -> None:
        """Delete everything of the run (quiet when it is already gone)."""

    @abc.abstractmethod
    def logs(self, run: str, group: int, tail: int | None = None) -> bytes:
        """All the output (stdout and stderr) of a rank group's Pod so far; with ``tail``,
        only its last ``tail`` lines."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections and threads."""
