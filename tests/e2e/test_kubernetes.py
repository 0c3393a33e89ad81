"""A real master with a Kubernetes pool (docs/backends/kubernetes.md, `engine: podman`): the
trials of a random search run as Pods that Podman plays from the generated specs, a pause
stops a trial with SIGTERM and it resumes from its checkpoint, a restarted master re-attaches
to a running Pod, and an experiment without an image is refused at submit."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from tests.doc_blocks import block_with
from tests.e2e import master as e2e
from tests.e2e.master import CODE, Master
from tests.fixtures.containers import IMAGE

pytestmark = pytest.mark.containers

K8S = e2e.Pool("k8s", image=IMAGE, max_restarts=0)
DOC = Path(__file__).resolve().parents[2] / "docs" / "backends" / "kubernetes.md"


@pytest.fixture(scope="module")
def master(podman_env, tmp_path_factory) -> Iterator[Master]:
    """A master whose environment points Podman at the tests' podman root (as
    CONTAINERS_CONF would on a real machine), with the doc's one-machine pool."""
    config = "resource_pools:\n  - pool_name: default\n    slots: 1\n" + block_with(
        DOC, "engine: podman"
    ).removeprefix("resource_pools:\n")
    with pytest.MonkeyPatch.context() as mp:  # kept while the module runs: for restarts too
        for key, value in podman_env.items():
            mp.setenv(key, value)
        m = Master(tmp_path_factory.mktemp("k8s-master") / "home", config=config).start()
        yield m
        m.stop()


def test_a_random_search_runs_its_trials_as_pods(master):
    pools = {p["name"]: p for p in master.http.get("/resource-pools").json()}
    assert (pools["k8s"]["type"], pools["k8s"]["slots_total"]) == ("kubernetes", os.cpu_count())
    assert (pools["k8s"]["healthy"], pools["k8s"]["problem"]) == (True, None)
    for trial in e2e.random_search(master, K8S, trials=3, timeout=120):
        [run] = trial["runs"]
        assert run["environment"]["engine"] == "podman kube play"
        assert run["environment"]["image"] == IMAGE
        assert run["environment"]["jobs"][0].startswith(f"shipyard-t{trial['id']}-r1-")
        checkpoint = master.home / "checkpoints" / trial["latest_checkpoint"] / "state.json"
        assert json.loads(checkpoint.read_text()) == {"step": 6}
    shown = master.cli("pool", "list")
    assert shown.returncode == 0 and "kubernetes" in shown.stdout


def test_a_paused_trial_checkpoints_and_resumes_in_a_new_pod(master):
    exp, trial_id = K8S.start_trial(master, "k8s-paused", e2e.PAUSABLE, 8)
    e2e.pause_then_resume(master, exp["id"], trial_id)


def test_a_restarted_master_reattaches_a_running_pod(master):
    exp, trial_id = K8S.start_trial(
        master, "k8s-reattach", "{steps: 25, ckpt_every: 5, sleep: 0.2}", 3
    )
    e2e.restart_master(master, exp["id"], trial_id)  # the same Pod, never relaunched


def test_an_experiment_without_an_image_is_refused_at_submit(master):
    response = master.post_experiment(
        replace(K8S, image=None).config("k8s-no-image", "{steps: 2}"), CODE
    )
    assert response.status_code == 422
    [detail] = response.json()["error"]["details"]
    assert detail["path"] == "environment.image"
    assert "is a kubernetes pool: set environment.image" in detail["message"]
