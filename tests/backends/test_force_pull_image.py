"""environment.force_pull_image: the image is pulled before every run, by the run itself
(`run --pull always`; Kubernetes' imagePullPolicy Always), and the run records the image's
name (the master does not know the pulled image's id)."""

from __future__ import annotations

import pytest
from kubernetes import client

from shipyard.backends.base import Handle, RunStatus
from shipyard.backends.kubernetes.manifests import build
from shipyard.backends.kubernetes.options import KubernetesOptions
from shipyard.backends.local.backend import LocalBackend
from shipyard.backends.local.containers import ContainerRuntime, mounts_for, run_argv
from shipyard.backends.local.options import ContainersConfig
from tests.backends import test_containers as local
from tests.backends import test_kubernetes as kube
from tests.backends.test_contract import output, wait_exit
from tests.fixtures.containers import IMAGE


def argv_text(tmp_path, force: bool) -> str:
    spec = local.make_spec(tmp_path, ["python3", "train.py"], force_pull_image=force)
    podman = ContainerRuntime("podman", "/usr/bin/podman", {})
    argv = run_argv(
        podman,
        spec,
        mounts=mounts_for(spec),
        name="n",
        image_ref="ref",
        env_file="/tmp/env",
        env_names=[],
        extra_args=[],
    )
    return " ".join(argv)


def test_the_run_pulls_always_with_force_pull_image_and_never_without(tmp_path):
    assert "--pull always" in argv_text(tmp_path, force=True)
    assert "--pull never" in argv_text(tmp_path, force=False)


@pytest.mark.parametrize(("force", "policy"), [(True, "Always"), (False, "IfNotPresent")])
def test_kubernetes_pulls_always_with_force_pull_image(tmp_path, force, policy):
    spec = kube.make_spec(tmp_path)
    spec.force_pull_image = force
    made = build(
        spec, KubernetesOptions(slot_type="cpu"), rendezvous=kube.no_rendezvous, host_network=False
    )
    job = kube.deserialize(made.jobs[0], "V1Job")
    [container] = job.spec.template.spec.containers
    assert isinstance(container, client.V1Container)
    assert container.image_pull_policy == policy


@pytest.mark.containers
def test_podman_pulls_before_the_run(tmp_path, podman_env):
    """The test image exists only locally (nothing here serves a registry): a forced pull
    must fail, in the trial's output, where the same run without it uses the local copy."""
    image = f"localhost/{IMAGE}"
    backend = LocalBackend(
        slots=1, containers=ContainersConfig(runtime="podman"), engine_env=podman_env
    )
    argv = ["python3", "-c", "print('ran in the image')"]
    spec = local.make_spec(tmp_path, argv, image=image, force_pull_image=True)
    handle = backend.launch(spec)
    state = wait_exit(backend, handle)
    text = output(backend, handle)
    assert state.status == RunStatus.EXITED and state.exit_code != 0, text
    assert "ran in the image" not in text
    assert image in text and "pull" in text.lower(), text  # podman's own pull error
    assert handle.data[Handle.ENVIRONMENT] == {
        "runtime": "podman",
        "image": image,
        "pull": "always",
    }
    backend.release(handle)

    spec = local.make_spec(tmp_path, argv, image=image)
    handle = backend.launch(spec)
    assert wait_exit(backend, handle).exit_code == 0
    assert "ran in the image" in output(backend, handle)
    assert "image_id" in handle.data[Handle.ENVIRONMENT]
    backend.release(handle)
