"""A `type: kubernetes` pool's settings: where the cluster is and what each trial's Pod gets."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from shipyard.backends.options import BackendOptions, SlotTypeOption

_DNS_LABEL = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"


class KubernetesOptions(BackendOptions, SlotTypeOption):
    type: Literal["kubernetes"] = "kubernetes"
    # api: a Kubernetes API server, through the official client (kubeconfig, else in-cluster).
    # podman: the same Pod specs run by `podman kube play` on the master's machine, with no
    # API server (what Shipyard's tests run; also one machine without a cluster).
    engine: Literal["api", "podman"] = "api"
    namespace: str = Field(default="default", pattern=_DNS_LABEL)
    kubeconfig: str | None = None  # default: in-cluster config, else ~/.kube/config
    context: str | None = None  # a kubeconfig context other than its current one
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] = "IfNotPresent"
    # How the trial's Pods reach the master (default: the master's own URL, right when the
    # Pods use the host's network).
    master_url: str | None = None
    host_network: bool = False
    # engine: podman only: a Podman network the Pods join instead of the host's (then
    # master_url must name an address of the master they reach there).
    network: str | None = Field(default=None, min_length=1)
    # A gang larger than this is split into rank groups, one Job (one Pod) each; default: the
    # whole gang in one Pod.
    slots_per_pod: int | None = Field(default=None, ge=1)
    gpu_resource: str = "nvidia.com/gpu"  # the extended resource a GPU slot asks for
    service_account: str | None = None
    node_selector: dict[str, str] = Field(default_factory=dict)
    tolerations: list[dict[str, Any]] = Field(default_factory=list)
    # true: the nodes mount the master's disk at its paths (NFS), and each Pod gets hostPath
    # volumes of the trial's files; false: a Pod mounts nothing of the master's and runs the
    # trial through shipyard.launch.entry (code and config over HTTP, output sent back), so
    # the image needs Shipyard installed and checkpoints go to s3.
    shared_fs: bool = False
    # false only: a directory on each node (a hostPath) where runs keep the code snapshots
    # they fetched, so the next trial on the node downloads nothing; default: none kept.
    code_cache_dir: str | None = None
    # SIGKILL this long after SIGTERM if the master cannot do it itself (it died meanwhile).
    termination_grace_s: int = Field(default=600, ge=0)

    def shares_masters_files(self) -> bool:
        return self.shared_fs

    @model_validator(mode="after")
    def _network_is_podmans(self) -> KubernetesOptions:
        if self.network is not None and self.engine != "podman":
            raise ValueError("network is for engine: podman (a cluster's Pods use its own)")
        if self.network is not None and self.master_url is None:
            raise ValueError(
                "network needs master_url: the Pods on that network do not reach the "
                "master at 127.0.0.1"
            )
        return self
