"""A trial run as Kubernetes objects, built with the official client's models: one Job per
rank group (a Pod that runs the group's ranks through the trial's launcher), and for a gang
of several groups a headless Service by which the groups find group 0.

With a spec that shares the master's files (a pool with `shared_fs: true`), the Pod sees
them at the master's paths (hostPath volumes: the nodes must share the master's file system
there, as on a Slurm cluster), and the master's shipyard package mounted read-only, so an
image needs only python3 (>= 3.11). Sharing nothing, it mounts only the node's own paths
(bind mounts, the code cache) and its command is shipyard.launch.entry, installed in the
image. Its environment is the trial's, plus the multi-node variables of launch/_nodes.py
when there are several groups; the variables that hold credentials come from a Secret of
the run's own, not from the Pod spec.
"""

from __future__ import annotations

import base64
import hashlib
import inspect
import json
import os
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from kubernetes import client

from shipyard.backends.base import TrialLaunchSpec
from shipyard.backends.kubernetes.cluster import GROUP_LABEL, RUN_LABEL, RunManifests
from shipyard.backends.kubernetes.options import KubernetesOptions
from shipyard.backends.local.containers import Mount, container_env, mounts_for
from shipyard.common.errors import ConfigError
from shipyard.common.masking import masked_names
from shipyard.common.node_env import CACHE_ENV

CONTAINER = "trial"
_PROPAGATION = {  # docker's bind propagation -> Kubernetes' mountPropagation
    "rslave": "HostToContainer",
    "slave": "HostToContainer",
    "rshared": "Bidirectional",
    "shared": "Bidirectional",
}
_SERIALIZER = client.ApiClient()
# Credentials a trial gets besides its secrets' variables (named in MASK_ENV): its task
# token, the checkpoint storage (S3 keys) and AWS's own variables.
CREDENTIALS = frozenset(
    {
        "SHIPYARD_TASK_TOKEN",
        "SHIPYARD_CHECKPOINT_STORAGE",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
    }
)


def run_name(spec: TrialLaunchSpec) -> str:
    """A DNS label unique per master and run (the log path is), short enough for suffixes."""
    suffix = hashlib.sha256(str(spec.log_path or spec.workdir).encode()).hexdigest()[:8]
    return f"shipyard-t{spec.trial_id}-r{spec.run_id}-{suffix}"


def group_sizes(slots: int, slots_per_pod: int | None) -> list[int]:
    """How many slots each rank group (Pod) gets: equal groups, as the launchers need."""
    per_pod = min(slots_per_pod or slots, slots) or 1
    if slots % per_pod:
        raise ConfigError(
            f"resources.slots_per_trial {slots} is not a multiple of the kubernetes pool's "
            f"slots_per_pod {per_pod}: every Pod of a gang runs as many ranks"
        )
    return [per_pod] * max(1, slots // per_pod)


def build(
    spec: TrialLaunchSpec,
    options: KubernetesOptions,
    *,
    rendezvous: Callable[[str], tuple[str, int]],
    host_network: bool,
) -> RunManifests:
    """The run's objects as plain dicts (what the API takes, and what `kube play` reads)."""
    if not spec.image:
        raise ConfigError(
            "a kubernetes pool runs every trial in a container: set environment.image"
        )
    name = run_name(spec)
    sizes = group_sizes(len(spec.slots), options.slots_per_pod)
    kind = spec.slots[0].kind if spec.slots else "cpu"
    meet = rendezvous(name) if len(sizes) > 1 else None
    # Sharing nothing, the image has shipyard installed: no package mounted, no path.
    run_env = container_env(spec) if spec.shares_files else dict(spec.env)
    if not spec.shares_files and options.code_cache_dir:
        run_env[CACHE_ENV] = options.code_cache_dir
    if options.master_url:
        run_env["SHIPYARD_MASTER"] = options.master_url
    credentials = credential_names(spec.env)
    hidden = {k: v for k, v in run_env.items() if k in credentials}
    jobs = []
    for group, size in enumerate(sizes):
        env = dict(run_env)
        env["SHIPYARD_SLOT_IDS"] = ",".join(f"{kind}{i}" for i in range(size))
        if meet is not None:
            env["SHIPYARD_NUM_NODES"] = str(len(sizes))
            env["SHIPYARD_NODE_RANK"] = str(group)
            env["SHIPYARD_RENDEZVOUS_ADDR"] = f"{meet[0]}:{meet[1]}"
        pod = _pod_spec(
            spec, options, env, kind, size, host_network, credentials, secret_name(name)
        )
        if len(sizes) > 1:
            pod.hostname, pod.subdomain = f"g{group}", name  # g0.<name>.<namespace>.svc
        labels = _labels(spec, name) | {GROUP_LABEL: str(group)}
        job = client.V1Job(
            api_version="batch/v1",
            kind="Job",
            metadata=client.V1ObjectMeta(name=f"{name}-g{group}", labels=labels),
            spec=client.V1JobSpec(
                backoff_limit=0,  # Shipyard restarts trials itself, from their checkpoint
                completions=1,
                parallelism=1,
                template=client.V1PodTemplateSpec(
                    metadata=client.V1ObjectMeta(labels=labels), spec=pod
                ),
            ),
        )
        jobs.append(_SERIALIZER.sanitize_for_serialization(job))
    service = None
    if meet is not None:
        service = _SERIALIZER.sanitize_for_serialization(
            _headless_service(name, _labels(spec, name), meet[1])
        )
    secret = None
    if hidden:
        secret = _SERIALIZER.sanitize_for_serialization(
            _credentials_secret(name, _labels(spec, name), hidden)
        )
    return RunManifests(name=name, jobs=jobs, service=service, secret=secret)


def _labels(spec: TrialLaunchSpec, name: str) -> dict[str, str]:
    return {
        RUN_LABEL: name,
        "shipyard.ai/trial-id": str(spec.trial_id),
        "shipyard.ai/run-id": str(spec.run_id),
    }


def _pod_spec(
    spec: TrialLaunchSpec,
    options: KubernetesOptions,
    env: dict[str, str],
    kind: str,
    size: int,
    host_network: bool,
    credentials: set[str],
    secret: str,
) -> client.V1PodSpec:
    """``credentials``: the variables the Pod takes from its run's Secret ``secret``."""
    volumes, volume_mounts = [], []
    mounts: list[tuple[Mount, str | None]]  # each with its hostPath type
    if spec.shares_files:
        mounts = [(mount, None) for mount in mounts_for(spec)]
    else:
        mounts = _node_mounts(spec, options)
    for i, (mount, host_path_type) in enumerate(mounts):
        volumes.append(
            client.V1Volume(
                name=f"v{i}",
                host_path=client.V1HostPathVolumeSource(path=mount.source, type=host_path_type),
            )
        )
        volume_mounts.append(
            client.V1VolumeMount(
                name=f"v{i}",
                mount_path=mount.target,
                read_only=mount.read_only or None,
                mount_propagation=_PROPAGATION.get(mount.propagation),
            )
        )
    if kind == "gpu":
        resources = client.V1ResourceRequirements(limits={options.gpu_resource: str(size)})
    else:
        resources = client.V1ResourceRequirements(requests={"cpu": str(size)})
    container = client.V1Container(
        name=CONTAINER,
        image=spec.image,
        # force_pull_image: Determined's option, as Kubernetes says it.
        image_pull_policy="Always" if spec.force_pull_image else options.image_pull_policy,
        command=list(spec.argv),
        working_dir=spec.workdir or None,  # sharing nothing: the entry makes its own
        env=[
            _from_secret(k, secret) if k in credentials else client.V1EnvVar(name=k, value=v)
            for k, v in sorted(env.items())
        ],
        volume_mounts=volume_mounts,
        resources=resources,
        security_context=_user(),
    )
    return client.V1PodSpec(
        containers=[container],
        volumes=volumes,
        restart_policy="Never",
        # The pause container is PID 1, not the trial: PID 1 ignores a SIGTERM it has no
        # handler for, and a plain `python3 train.py` would then live until the SIGKILL.
        share_process_namespace=True,
        host_network=host_network or None,
        dns_policy="ClusterFirstWithHostNet" if host_network else None,
        termination_grace_period_seconds=options.termination_grace_s,
        service_account_name=options.service_account,
        automount_service_account_token=False,  # a trial has no business with the API
        enable_service_links=False,  # no Service variables in the trial's environment
        node_selector=options.node_selector or None,
        tolerations=[_model(t, "V1Toleration") for t in options.tolerations] or None,
    )


def _node_mounts(
    spec: TrialLaunchSpec, options: KubernetesOptions
) -> list[tuple[Mount, str | None]]:
    """Sharing nothing with the master: only the node's own paths, the experiment's
    bind_mounts (absolute: there is no working directory to be relative to) and the code
    cache; each with its hostPath type: the code cache is made on the node if missing, any
    other path must be there."""
    mounts: list[tuple[Mount, str | None]] = [
        (
            Mount(
                str(raw["host_path"]),
                str(raw["container_path"]),
                bool(raw.get("read_only")),
                str(raw.get("propagation") or "rprivate"),
            ),
            None,
        )
        for raw in spec.bind_mounts
    ]
    if options.code_cache_dir:
        mounts.append((Mount(options.code_cache_dir, options.code_cache_dir), "DirectoryOrCreate"))
    return mounts


def _model(manifest: dict[str, Any], kind: str) -> Any:
    """A manifest fragment as written in YAML (camelCase) as the client's model."""
    return read_model(_SERIALIZER, manifest, kind)


def read_model(api: Any, manifest: dict[str, Any], kind: str) -> Any:
    """``api.deserialize`` on both of the client's signatures: (text, type, content type)
    from 37, (a response with .data, type) before; the s3 extra's botocore holds us below 37
    where both are installed."""
    text = json.dumps(manifest)
    if len(inspect.signature(api.deserialize).parameters) >= 3:
        return api.deserialize(text, kind, "application/json")
    return api.deserialize(SimpleNamespace(data=text), kind)


def _user() -> client.V1SecurityContext | None:
    """Files the trial writes (checkpoints) belong to the master's user, so it can delete
    them: a non-root master runs the trial as itself."""
    if os.getuid() == 0:
        return None
    return client.V1SecurityContext(run_as_user=os.getuid(), run_as_group=os.getgid())


def credential_names(env: dict[str, str]) -> set[str]:
    """The variables that hold credentials: kept in the run's Secret, not in the Pod spec
    (which anyone who may list Pods reads)."""
    masked = masked_names(env)
    return {n for n in env if n in CREDENTIALS or n in masked}


def secret_name(run: str) -> str:
    return f"{run}-env"


def _credentials_secret(
    run: str, labels: dict[str, str], values: dict[str, str]
) -> client.V1Secret:
    return client.V1Secret(
        api_version="v1",
        kind="Secret",
        type="Opaque",
        metadata=client.V1ObjectMeta(name=secret_name(run), labels=labels),
        data={k: base64.b64encode(v.encode()).decode() for k, v in sorted(values.items())},
    )


def _from_secret(name: str, secret: str) -> client.V1EnvVar:
    return client.V1EnvVar(
        name=name,
        value_from=client.V1EnvVarSource(
            secret_key_ref=client.V1SecretKeySelector(name=secret, key=name)
        ),
    )


def _headless_service(name: str, labels: dict[str, str], port: int) -> client.V1Service:
    return client.V1Service(
        api_version="v1",
        kind="Service",
        metadata=client.V1ObjectMeta(name=name, labels=labels),
        spec=client.V1ServiceSpec(
            cluster_ip="None",
            selector={RUN_LABEL: name, GROUP_LABEL: "0"},
            publish_not_ready_addresses=True,  # the groups meet before any is "ready"
            ports=[
                client.V1ServicePort(name="rendezvous", port=port),
                client.V1ServicePort(name="coordinator", port=port + 1),
            ],
        ),
    )


def pod_of(job: dict[str, Any]) -> dict[str, Any]:
    """A Job's Pod as a Pod manifest of its own (named as the Job)."""
    template = job["spec"]["template"]
    metadata = {**template.get("metadata", {}), "name": job["metadata"]["name"]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": template["spec"]}
