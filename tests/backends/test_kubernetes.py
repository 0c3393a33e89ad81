"""The Kubernetes backend beyond the contract suite: the objects it would send to an API server
(read back by the official client's models), how it reads Pods' states as the API reports
them, gangs of several Pods played for real by Podman, its log copy across a master restart,
the reason of a Pod whose entry failed, and a cluster it cannot reach."""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from pathlib import Path

import pytest
from kubernetes import client

from shipyard.backends.base import RunStatus, Slot, TrialLaunchSpec
from shipyard.backends.kubernetes.api import ApiCluster, _state
from shipyard.backends.kubernetes.backend import KubernetesBackend
from shipyard.backends.kubernetes.cluster import GROUP_LABEL, RUN_LABEL
from shipyard.backends.kubernetes.manifests import build, pod_of, read_model, run_name
from shipyard.backends.kubernetes.options import KubernetesOptions
from shipyard.common.errors import ConfigError
from shipyard.launch import entry
from shipyard.server.pools import load_master_config
from tests.backends.test_contract import launch, output, wait_exit, wait_output
from tests.doc_blocks import block_with
from tests.fixtures import containers
from tests.fixtures.kubernetes import kubernetes_options
from tests.fixtures.poll import poll

IMAGE = "registry.example.com/team/py:3.11"


def cpu_slots(n: int) -> list[Slot]:
    return [Slot(f"cpu{i}", "cpu", "kubernetes:default", i) for i in range(n)]


def make_spec(tmp_path, slots: int = 1, image: str | None = IMAGE, **env) -> TrialLaunchSpec:
    storage = tmp_path / "checkpoints"
    return TrialLaunchSpec(
        trial_id=7,
        run_id=2,
        argv=["python3", "train.py", "--lr", "0.1"],
        env={
            "SHIPYARD_MASTER": "http://127.0.0.1:8080",
            "SHIPYARD_CHECKPOINT_STORAGE": json.dumps(
                {"type": "shared_fs", "base_path": str(storage)}
            ),
            **env,
        },
        workdir=str(tmp_path / "work"),
        slots=cpu_slots(slots),
        image=image,
        log_path=str(tmp_path / "trial-7-run-2.log"),
    )


def deserialize(manifest: dict, kind: str):
    """What the official client reads the manifest as: a misspelt field reads as None, a
    missing required one fails."""
    return read_model(client.ApiClient(), manifest, kind)


def no_rendezvous(run: str) -> tuple[str, int]:
    raise AssertionError("a one-Pod run needs no rendezvous")


def test_one_pod_job_carries_the_trial_as_kubernetes_would_run_it(tmp_path):
    spec = make_spec(tmp_path, slots=2, OMP_NUM_THREADS="1")
    options = KubernetesOptions(
        slot_type="cpu",
        namespace="training",
        master_url="http://master.training.svc:8080",
        node_selector={"pool": "cpu"},
        tolerations=[{"key": "dedicated", "operator": "Exists", "tolerationSeconds": 30}],
    )
    made = build(spec, options, rendezvous=no_rendezvous, host_network=False)
    assert made.service is None and len(made.jobs) == 1
    job = deserialize(made.jobs[0], "V1Job")
    assert job.metadata.name == f"{run_name(spec)}-g0"
    assert job.metadata.labels[RUN_LABEL] == made.name
    assert job.spec.backoff_limit == 0 and job.spec.completions == 1
    pod = job.spec.template.spec
    assert pod.restart_policy == "Never" and not pod.host_network
    assert pod.node_selector == {"pool": "cpu"}
    assert (pod.tolerations[0].key, pod.tolerations[0].toleration_seconds) == ("dedicated", 30)
    assert pod.automount_service_account_token is False
    assert pod.share_process_namespace is True  # the trial is not PID 1: SIGTERM reaches it
    [container] = pod.containers
    assert container.image == IMAGE
    assert container.command == ["python3", "train.py", "--lr", "0.1"]
    assert container.working_dir == spec.workdir
    assert container.resources.requests == {"cpu": "2"}
    env = {e.name: e.value for e in container.env}
    assert env["SHIPYARD_MASTER"] == "http://master.training.svc:8080"
    assert env["OMP_NUM_THREADS"] == "1" and env["SHIPYARD_SLOT_IDS"] == "cpu0,cpu1"
    assert "SHIPYARD_NUM_NODES" not in env
    assert env["PYTHONPATH"].startswith("/opt/shipyard/lib")
    volumes = {v.name: v.host_path.path for v in pod.volumes}
    mounts = {m.mount_path: (volumes[m.name], bool(m.read_only)) for m in container.volume_mounts}
    assert mounts[spec.workdir] == (spec.workdir, False)
    assert mounts[str(tmp_path / "checkpoints")] == (str(tmp_path / "checkpoints"), False)
    assert mounts["/opt/shipyard/lib/shipyard"][1] is True


def test_a_pod_that_shares_nothing_mounts_nothing_of_the_masters(tmp_path):
    """The spec the master makes for a pool without shared_fs: the entry fetches the code, so
    the Pod has no working dir, no package on PYTHONPATH and no hostPath of the master's;
    only the node's code cache and the experiment's own (absolute) bind mounts."""
    spec = make_spec(tmp_path, SHIPYARD_CONTEXT_ID="ab12", SHIPYARD_SHIP_LOGS="1")
    spec = replace(
        spec,
        argv=["python3", "-m", "shipyard.launch.entry", "--", "python3", "train.py"],
        workdir="",
        shares_files=False,
        bind_mounts=[{"host_path": "/data", "container_path": "/data", "read_only": True}],
    )
    options = KubernetesOptions(slot_type="cpu", code_cache_dir="/var/cache/shipyard")
    [manifest] = build(spec, options, rendezvous=no_rendezvous, host_network=False).jobs
    pod = deserialize(manifest, "V1Job").spec.template.spec
    [container] = pod.containers
    assert container.command[:4] == ["python3", "-m", "shipyard.launch.entry", "--"]
    assert container.working_dir is None
    env = {e.name: e.value for e in container.env}
    assert "PYTHONPATH" not in env and env["SHIPYARD_CACHE_DIR"] == "/var/cache/shipyard"
    volumes = {v.name: v.host_path for v in pod.volumes}
    mounts = {m.mount_path: volumes[m.name] for m in container.volume_mounts}
    assert {path: (v.path, v.type) for path, v in mounts.items()} == {
        "/data": ("/data", None),
        "/var/cache/shipyard": ("/var/cache/shipyard", "DirectoryOrCreate"),
    }


def test_the_runs_credentials_are_in_a_secret_not_in_the_pod_spec(tmp_path):
    storage = json.dumps({"type": "s3", "bucket": "b", "secret_key": "s3-secret-value"})
    spec = make_spec(
        tmp_path,
        slots=2,
        SHIPYARD_TASK_TOKEN="task-token-value",
        SHIPYARD_CHECKPOINT_STORAGE=storage,
        WANDB_API_KEY="wandb-value",
        SHIPYARD_MASK_ENV="WANDB_API_KEY",
    )
    options = KubernetesOptions(slot_type="cpu", slots_per_pod=1)
    made = build(spec, options, rendezvous=lambda run: ("g0", 29400), host_network=False)
    jobs = json.dumps(made.jobs)
    assert not [v for v in ("task-token-value", "s3-secret-value", "wandb-value") if v in jobs]
    secret = deserialize(made.secret, "V1Secret")
    assert secret.metadata.name == f"{made.name}-env"
    assert secret.metadata.labels[RUN_LABEL] == made.name  # deleted with the run's objects
    decoded = {k: base64.b64decode(v).decode() for k, v in secret.data.items()}
    assert decoded == {
        "SHIPYARD_TASK_TOKEN": "task-token-value",
        "SHIPYARD_CHECKPOINT_STORAGE": storage,
        "WANDB_API_KEY": "wandb-value",
    }
    for job in made.jobs:  # every rank group's Pod reads them from the Secret
        [container] = deserialize(job, "V1Job").spec.template.spec.containers
        refs = {e.name: e.value_from.secret_key_ref for e in container.env if e.value_from}
        assert {n: (r.name, r.key) for n, r in refs.items()} == {
            n: (secret.metadata.name, n) for n in decoded
        }
    plain = build(make_spec(tmp_path), options, rendezvous=no_rendezvous, host_network=False)
    assert plain.secret is None or "SHIPYARD_TASK_TOKEN" not in plain.secret["data"]


def test_gpu_slots_ask_for_the_pools_gpu_resource(tmp_path):
    spec = make_spec(tmp_path)
    spec.slots = [Slot("gpu0", "gpu", "kubernetes:default", 0)]
    options = KubernetesOptions(gpu_resource="amd.com/gpu")
    [job] = build(spec, options, rendezvous=no_rendezvous, host_network=False).jobs
    container = deserialize(job, "V1Job").spec.template.spec.containers[0]
    assert container.resources.limits == {"amd.com/gpu": "1"}
    assert {e.name: e.value for e in container.env}["SHIPYARD_SLOT_IDS"] == "gpu0"


def test_a_gang_larger_than_a_pod_is_a_job_per_rank_group_and_a_headless_service(tmp_path):
    spec = make_spec(tmp_path, slots=4)
    options = KubernetesOptions(slot_type="cpu", namespace="training", slots_per_pod=2)
    made = build(
        spec, options, rendezvous=lambda run: (f"g0.{run}.training.svc", 29400), host_network=False
    )
    assert [j["metadata"]["name"] for j in made.jobs] == [f"{made.name}-g0", f"{made.name}-g1"]
    for group, manifest in enumerate(made.jobs):
        pod = deserialize(manifest, "V1Job").spec.template.spec
        assert (pod.hostname, pod.subdomain) == (f"g{group}", made.name)
        env = {e.name: e.value for e in pod.containers[0].env}
        assert env["SHIPYARD_NUM_NODES"] == "2" and env["SHIPYARD_NODE_RANK"] == str(group)
        assert env["SHIPYARD_RENDEZVOUS_ADDR"] == f"g0.{made.name}.training.svc:29400"
        assert env["SHIPYARD_SLOT_IDS"] == "cpu0,cpu1"
        assert pod.containers[0].resources.requests == {"cpu": "2"}
    service = deserialize(made.service, "V1Service")
    assert service.metadata.name == made.name and service.spec.cluster_ip == "None"
    assert service.spec.selector == {RUN_LABEL: made.name, GROUP_LABEL: "0"}
    assert service.spec.publish_not_ready_addresses is True
    assert pod_of(made.jobs[1])["metadata"]["name"] == f"{made.name}-g1"


def test_a_gang_that_does_not_split_evenly_and_a_trial_without_image_are_refused(tmp_path):
    options = KubernetesOptions(slot_type="cpu", slots_per_pod=2)
    with pytest.raises(
        ConfigError, match="slots_per_trial 3 is not a multiple of .*slots_per_pod 2"
    ):
        build(make_spec(tmp_path, slots=3), options, rendezvous=no_rendezvous, host_network=False)
    with pytest.raises(ConfigError, match="set environment.image"):
        build(
            make_spec(tmp_path, image=None), options, rendezvous=no_rendezvous, host_network=False
        )


def api_pod(phase: str, *, reason=None, conditions=(), terminated=None, waiting=None):
    state = client.V1ContainerState(
        terminated=client.V1ContainerStateTerminated(exit_code=terminated)
        if terminated is not None
        else None,
        waiting=client.V1ContainerStateWaiting(reason=waiting, message="pull access denied")
        if waiting
        else None,
    )
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name="p", labels={GROUP_LABEL: "1"}),
        status=client.V1PodStatus(
            phase=phase,
            reason=reason,
            message="The node was low on resource: memory." if reason else None,
            conditions=list(conditions),
            container_statuses=[
                client.V1ContainerStatus(
                    name="trial",
                    state=state,
                    image="i",
                    image_id="",
                    ready=False,
                    restart_count=0,
                )
            ],
        ),
    )


def test_pod_states_as_the_api_reports_them():
    assert _state(api_pod("Failed", terminated=3)).exit_code == 3
    assert _state(api_pod("Failed", terminated=3)).group == 1
    evicted = _state(api_pod("Failed", reason="Evicted"))
    assert evicted.preempted == "Evicted: The node was low on resource: memory."
    disrupted = client.V1PodCondition(
        type="DisruptionTarget",
        status="True",
        reason="PreemptionByScheduler",
        message="preempted by a higher priority pod",
    )
    preempted = _state(api_pod("Running", conditions=[disrupted]))
    assert preempted.preempted == "PreemptionByScheduler: preempted by a higher priority pod"
    pull = _state(api_pod("Pending", waiting="ErrImagePull"))
    assert pull.cannot_start == "ErrImagePull: pull access denied"
    assert _state(api_pod("Running")).preempted is None


def test_a_cluster_without_configuration_is_a_health_problem_not_a_crash(tmp_path, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing-kubeconfig"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    backend = KubernetesBackend(KubernetesOptions(slot_type="cpu"), pool="k8s")
    assert backend.capacity() == []
    assert "no Kubernetes configuration" in (backend.health() or "")
    with pytest.raises(Exception, match="no Kubernetes configuration"):
        backend.launch(make_spec(tmp_path))
    with pytest.raises(Exception, match="no Kubernetes configuration"):
        ApiCluster(KubernetesOptions(kubeconfig=str(tmp_path / "missing-kubeconfig")))


# -- played by Podman ---------------------------------------------------------------------


@pytest.fixture
def two_pod_backend(podman_env):
    backend = KubernetesBackend(
        kubernetes_options(slots_per_pod=1), pool="k8s", engine_env=podman_env
    )
    yield backend
    backend.close()


@pytest.mark.containers
def test_a_gang_of_two_pods_meets_through_the_rendezvous_address(
    kubernetes_engine, two_pod_backend
):
    handle, _ = launch(
        kubernetes_engine,
        two_pod_backend,
        """
        import os
        print("rank", os.environ["RANK"], "of", os.environ["WORLD_SIZE"], flush=True)
        """,
        slots=2,
        argv=["python3", "-m", "shipyard.launch.torch_distributed", "python3", "{script}"],
    )
    assert len(handle.data["environment"]["jobs"]) == 2
    state = wait_exit(two_pod_backend, handle)
    text = output(two_pod_backend, handle)
    assert (state.status, state.exit_code) == (RunStatus.EXITED, 0), text
    assert "[rank=0] rank 0 of 2" in text and "[rank=1] rank 1 of 2" in text
    two_pod_backend.release(handle)
    assert two_pod_backend.cluster.pods(handle.data["kubernetes"]["run"]) is None


@pytest.mark.containers
def test_a_gang_whose_pod_fails_ends_with_its_code_and_stops_the_other(
    kubernetes_engine, two_pod_backend
):
    handle, name = launch(
        kubernetes_engine,
        two_pod_backend,
        """
        import os, signal, sys, time
        rank = os.environ["SHIPYARD_NODE_RANK"]
        def on_term(*_):
            name = f"{os.environ['CONTRACT_NAME']}.term-{rank}"
            open(os.path.join(os.environ["CONTRACT_DIR"], name), "w").close()
            sys.exit(143)
        signal.signal(signal.SIGTERM, on_term)
        print("group", rank, "up", flush=True)
        if rank == "1":
            time.sleep(1)
            sys.exit(3)
        time.sleep(600)
        """,
        slots=2,
    )
    state = wait_exit(two_pod_backend, handle)
    assert (state.status, state.exit_code) == (RunStatus.EXITED, 3)
    term_0 = kubernetes_engine.workdir / f"{name}.term-0"
    poll(term_0.exists, "group 0 to get SIGTERM", timeout_s=60, every_s=0.2)
    assert not (kubernetes_engine.workdir / f"{name}.term-1").exists()
    text = output(two_pod_backend, handle)
    assert "group 0 up" in text and "group 1 up" in text
    two_pod_backend.release(handle)


@pytest.mark.containers
def test_a_restarted_master_neither_repeats_nor_loses_log_lines(kubernetes_engine, podman_env):
    first = KubernetesBackend(kubernetes_options(), pool="k8s", engine_env=podman_env)
    handle, name = launch(
        kubernetes_engine,
        first,
        """
        import os, time
        go = os.path.join(os.environ["CONTRACT_DIR"], os.environ["CONTRACT_NAME"] + ".go")
        print("before", flush=True)
        while not os.path.exists(go):
            time.sleep(0.05)
        print("after", flush=True)
        """,
        slots=1,
    )
    wait_output(first, handle, "before")
    first.close()
    second = KubernetesBackend(kubernetes_options(), pool="k8s", engine_env=podman_env)
    recovered = second.recover(dict(handle.data))
    assert recovered is not None
    (kubernetes_engine.workdir / f"{name}.go").touch()
    assert wait_exit(second, recovered).exit_code == 0
    second.read_output(recovered, 0, final=True)
    log = open(handle.data["kubernetes"]["log_path"]).read()
    assert log == "before\nafter\n"
    second.release(recovered)
    assert second.recover(dict(handle.data)) is None
    second.close()


@pytest.mark.containers
def test_a_pod_whose_entry_fails_says_why_in_the_runs_reason(tmp_path, podman_env):
    """Sharing nothing, the entry sends the trial's output to the master; in an image without
    Shipyard it cannot even start, so the backend reads the tail of its Pod's log (for the
    master to quote, masked, when the run sent it nothing)."""
    backend = KubernetesBackend(kubernetes_options(), pool="k8s", engine_env=podman_env)
    spec = TrialLaunchSpec(
        trial_id=9,
        run_id=1,
        argv=[*entry.ARGV, "python3", "train.py"],
        env={
            "SHIPYARD_MASTER": "http://127.0.0.1:9",  # never reached: the entry fails first
            "SHIPYARD_SHIP_LOGS": "1",
        },
        workdir="",
        slots=backend.capacity()[:1],
        image=containers.IMAGE,  # python3, no Shipyard
        log_path=str(tmp_path / "no-shipyard.log"),
        shares_files=False,
    )
    handle = backend.launch(spec)
    try:
        state = wait_exit(backend, handle)
        assert (state.status, state.exit_code) == (RunStatus.EXITED, 1)
        assert state.last_output is not None
        assert "No module named 'shipyard'" in state.last_output
        assert backend.read_output(handle, 0, final=True) == (b"", 0)  # the entry's job
    finally:
        backend.release(handle)
        backend.close()


def test_the_docs_master_config_loads_and_bad_options_name_the_field(tmp_path):
    doc = Path(__file__).resolve().parents[2] / "docs" / "backends" / "kubernetes.md"
    config = tmp_path / "master.yaml"
    config.write_text(block_with(doc, "engine: api"))
    [_, pool] = load_master_config(config).resource_pools
    assert (pool.type, pool.namespace, pool.slots_per_pod) == ("kubernetes", "training", 8)
    config.write_text(
        "resource_pools:\n"
        "  - pool_name: k8s\n"
        "    type: kubernetes\n"
        "    namespace: Team_A\n"
        "    engine: docker\n"
    )
    with pytest.raises(ConfigError) as err:
        load_master_config(config)
    paths = {d["path"]: d["message"] for d in err.value.details}
    assert set(paths) == {"resource_pools.0.namespace", "resource_pools.0.engine"}
    assert "'api' or 'podman'" in paths["resource_pools.0.engine"]
    for extra, message in (
        ("    network: team\n", "network is for engine: podman"),
        ("    engine: podman\n    network: team\n", "network needs master_url"),
    ):
        config.write_text("resource_pools:\n  - pool_name: k8s\n    type: kubernetes\n" + extra)
        with pytest.raises(ConfigError) as err:
            load_master_config(config)
        [detail] = err.value.details
        assert detail["path"].startswith("resource_pools.0") and message in detail["message"]
