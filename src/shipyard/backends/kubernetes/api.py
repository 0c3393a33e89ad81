"""The cluster as a Kubernetes API server, through the official Python client.

Not exercised here: no API server can run on the test machines (docs/backends/kubernetes.md
says what was and was not run). The objects it creates are exactly those the Podman engine
plays in the tests (manifests.py builds both)."""

from __future__ import annotations

import threading
from typing import Any, cast

from kubernetes import client, config
from kubernetes.client.rest import ApiException

from shipyard.backends.kubernetes.cluster import (
    GROUP_LABEL,
    RENDEZVOUS_PORT,
    RUN_LABEL,
    Cluster,
    ClusterError,
    PodState,
    RunManifests,
)
from shipyard.backends.kubernetes.manifests import CONTAINER
from shipyard.backends.kubernetes.options import KubernetesOptions

# Pod conditions and reasons by which Kubernetes says it took the Pod away (the trial did
# not fail): eviction, preemption by a higher priority Pod, a node that went away.
_TAKEN_REASONS = {"Evicted", "Preempting", "Shutdown", "NodeLost", "Terminated"}
_CANNOT_START = {
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "CreateContainerConfigError",
    "CreateContainerError",
}


class ApiCluster(Cluster):
    def __init__(self, options: KubernetesOptions) -> None:
        self.options = options
        self.namespace = options.namespace
        self._timeout = options.timeout_s
        try:
            if options.kubeconfig or options.context:
                config.load_kube_config(config_file=options.kubeconfig, context=options.context)
            else:
                try:
                    config.load_incluster_config()
                except config.ConfigException:
                    config.load_kube_config()
        except (config.ConfigException, OSError) as exc:
            raise ClusterError(f"no Kubernetes configuration: {exc}") from exc
        self._api = client.ApiClient()
        self.core = client.CoreV1Api(self._api)
        self.batch = client.BatchV1Api(self._api)
        self._timers: list[threading.Timer] = []

    def health(self) -> str | None:
        try:
            client.VersionApi(self._api).get_code(_request_timeout=self._timeout)
        except Exception as exc:  # noqa: BLE001 - any failure means "cannot run trials now"
            return f"the Kubernetes API does not answer: {exc}"
        return None

    def slot_count(self, slot_type: str, gpu_resource: str) -> int:
        nodes = self._call(self.core.list_node).items
        total = 0
        for node in nodes:
            if node.spec.unschedulable:
                continue
            allocatable = node.status.allocatable or {}
            if slot_type == "gpu":
                total += int(allocatable.get(gpu_resource, 0))
            else:
                total += _whole_cpus(allocatable.get("cpu", "0"))
        return total

    def rendezvous(self, run: str) -> tuple[str, int]:
        return f"g0.{run}.{self.namespace}.svc", RENDEZVOUS_PORT

    def create(self, manifests: RunManifests) -> None:
        try:
            # The client sends a dict body as it is: the manifests Podman plays, unchanged.
            if manifests.secret:  # first: the Pods' variables refer to it
                self.core.create_namespaced_secret(self.namespace, manifests.secret)  # type: ignore[arg-type]
            if manifests.service:
                self.core.create_namespaced_service(self.namespace, manifests.service)  # type: ignore[arg-type]
            for job in manifests.jobs:
                self.batch.create_namespaced_job(self.namespace, job)  # type: ignore[arg-type]
        except ApiException as exc:
            self.remove(manifests.name)
            raise ClusterError(f"Kubernetes refused the trial's objects: {exc.reason}") from exc

    def pods(self, run: str) -> list[PodState] | None:
        listed = self._call(
            self.core.list_namespaced_pod, self.namespace, label_selector=f"{RUN_LABEL}={run}"
        )
        if not listed.items:
            # The Job controller makes the Pods a moment after the Jobs: not gone yet.
            jobs = self._call(
                self.batch.list_namespaced_job,
                self.namespace,
                label_selector=f"{RUN_LABEL}={run}",
            )
            return [] if jobs.items else None
        return sorted((_state(pod) for pod in listed.items), key=lambda p: p.group)

    def stop(self, run: str, grace_s: float) -> None:
        # A deadline makes the kubelet stop the Pod (SIGTERM, SIGKILL after the Pod's grace)
        # and keep it, with its containers' exit codes; a delete would remove them.
        for pod in self._pod_names(run):
            self._call(
                self.core.patch_namespaced_pod,
                pod,
                self.namespace,
                {"spec": {"activeDeadlineSeconds": 1}},
            )
        timer = threading.Timer(grace_s, self._kill, args=(run,))
        timer.daemon = True
        timer.start()
        self._timers = [t for t in self._timers if t.is_alive()] + [timer]

    def _kill(self, run: str) -> None:
        """The grace is over: what still runs is deleted at once (SIGKILL)."""
        try:
            for pod in self._pod_names(run):
                self.core.delete_namespaced_pod(pod, self.namespace, grace_period_seconds=0)
        except (ApiException, ClusterError):
            pass  # gone already, or the cluster is away: the Pod's own grace ends it

    def remove(self, run: str) -> None:
        selector = f"{RUN_LABEL}={run}"
        try:
            self.batch.delete_collection_namespaced_job(
                self.namespace, label_selector=selector, propagation_policy="Background"
            )
            self.core.delete_collection_namespaced_pod(self.namespace, label_selector=selector)
            services = self.core.list_namespaced_service(self.namespace, label_selector=selector)
            for service in services.items:
                assert service.metadata is not None and service.metadata.name is not None
                self.core.delete_namespaced_service(service.metadata.name, self.namespace)
            self.core.delete_collection_namespaced_secret(self.namespace, label_selector=selector)
        except ApiException as exc:
            if exc.status != 404:
                raise ClusterError(f"cannot delete the trial's objects: {exc.reason}") from exc

    def logs(self, run: str, group: int, tail: int | None = None) -> bytes:
        pods = self._call(
            self.core.list_namespaced_pod,
            self.namespace,
            label_selector=f"{RUN_LABEL}={run},{GROUP_LABEL}={group}",
        ).items
        if not pods:
            return b""
        try:
            response = self.core.read_namespaced_pod_log(
                pods[0].metadata.name,
                self.namespace,
                container=CONTAINER,
                tail_lines=tail,  # None: all of it
                _preload_content=False,
                _request_timeout=self._timeout,
            )
        except ApiException as exc:
            if exc.status in (400, 404):  # not started yet, or gone
                return b""
            raise ClusterError(f"cannot read the trial's log: {exc.reason}") from exc
        return cast(Any, response).data  # not preloaded: the raw urllib3 response

    def close(self) -> None:
        for timer in self._timers:
            timer.cancel()
        self._api.close()

    def _pod_names(self, run: str) -> list[str]:
        listed = self._call(
            self.core.list_namespaced_pod, self.namespace, label_selector=f"{RUN_LABEL}={run}"
        )
        return [pod.metadata.name for pod in listed.items]

    def _call(self, method, *args, **kwargs):
        try:
            return method(*args, _request_timeout=self._timeout, **kwargs)
        except ApiException as exc:
            raise ClusterError(f"the Kubernetes API answered {exc.status}: {exc.reason}") from exc
        except Exception as exc:  # noqa: BLE001 - connection errors of urllib3
            raise ClusterError(f"the Kubernetes API does not answer: {exc}") from exc


def _whole_cpus(quantity: str) -> int:
    if quantity.endswith("m"):
        return int(quantity[:-1]) // 1000
    return int(float(quantity))


def _state(pod) -> PodState:
    labels = pod.metadata.labels or {}
    group = int(labels.get(GROUP_LABEL, 0))
    status = pod.status
    exit_code, cannot_start = None, None
    for container in status.container_statuses or []:
        if container.name != CONTAINER:
            continue
        if container.state.terminated is not None:
            exit_code = container.state.terminated.exit_code
        waiting = container.state.waiting
        if waiting is not None and waiting.reason in _CANNOT_START:
            cannot_start = f"{waiting.reason}: {waiting.message or ''}".strip(": ")
    preempted = None
    if status.reason in _TAKEN_REASONS:
        preempted = f"{status.reason}: {status.message or ''}".strip(": ")
    for condition in status.conditions or []:
        if condition.type == "DisruptionTarget" and condition.status == "True":
            preempted = f"{condition.reason}: {condition.message or ''}".strip(": ")
    return PodState(
        group=group,
        phase=status.phase or "Unknown",
        exit_code=exit_code,
        preempted=preempted,
        cannot_start=cannot_start,
        name=pod.metadata.name,
    )
