"""A real master with a Kubernetes pool (docs/backends/kubernetes.md, `engine: podman`): the
trials of a random search run as Pods that Podman plays from the generated specs, a pause
stops a trial with SIGTERM and it resumes from its checkpoint, a restarted master re-attaches
to a running Pod, and an experiment without an image is refused at submit."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.doc_blocks import block_with
from tests.e2e.master import Master, pause_then_resume, resumed_from
from tests.fixtures.containers import IMAGE

pytestmark = pytest.mark.containers

CODE = Path(__file__).parent / "trial_code"
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


def steps_config(name: str, hparams: str, searcher: str, image: str | None = IMAGE) -> str:
    environment = f"environment: {{image: {image}}}\n" if image else ""
    return f"""
name: {name}
entrypoint: python3 steps.py
hyperparameters: {hparams}
searcher: {searcher}
resources: {{resource_pool: k8s}}
{environment}max_restarts: 0
"""


def start_trial(master: Master, name: str, hparams: str, steps: int) -> tuple[dict, int]:
    exp = master.create(steps_config(name, hparams, "{name: single, metric: val_loss}"), CODE)
    trials = master.wait_for(lambda: master.experiment(exp["id"])["trials"], what="the trial")
    trial_id = trials[0]["id"]
    master.wait_for(
        lambda: master.trial(trial_id)["steps_completed"] >= steps, timeout=60, what="steps"
    )
    return exp, trial_id


def test_a_random_search_runs_its_trials_as_pods(master):
    pools = {p["name"]: p for p in master.http.get("/resource-pools").json()}
    assert (pools["k8s"]["type"], pools["k8s"]["slots_total"]) == ("kubernetes", os.cpu_count())
    assert (pools["k8s"]["healthy"], pools["k8s"]["problem"]) == (True, None)
    exp = master.create(
        steps_config(
            "k8s-random",
            "{x: {type: double, minval: -1, maxval: 1}, steps: 6, ckpt_every: 3}",
            "{name: random, metric: val_loss, max_trials: 3, max_concurrent_trials: 3}",
        ),
        CODE,
    )
    done = master.wait(exp["id"], timeout=120)
    assert done["state"] == "COMPLETED"
    assert [t["state"] for t in done["trials"]] == ["COMPLETED"] * 3
    for summary in done["trials"]:
        trial = master.trial(summary["id"])
        assert [s for s, _ in master.metrics(trial["id"], "training", "loss")] == list(range(1, 7))
        assert [s for s, _ in master.metrics(trial["id"], "validation", "val_loss")] == [3, 6]
        [run] = trial["runs"]
        assert run["slots"][0].startswith("k8s/cpu")
        assert run["environment"]["engine"] == "podman kube play"
        assert run["environment"]["image"] == IMAGE
        assert run["environment"]["jobs"][0].startswith(f"shipyard-t{trial['id']}-r1-")
        checkpoint = master.home / "checkpoints" / trial["latest_checkpoint"] / "state.json"
        assert json.loads(checkpoint.read_text()) == {"step": 6}
        assert "finished" in master.logs(trial["id"])
    shown = master.cli("pool", "list")
    assert shown.returncode == 0 and "kubernetes" in shown.stdout


def test_a_paused_trial_checkpoints_and_resumes_in_a_new_pod(master):
    exp, trial_id = start_trial(master, "k8s-paused", "{steps: 30, ckpt_every: 5, sleep: 0.1}", 8)
    trial = pause_then_resume(master, exp["id"], trial_id)
    assert trial["runs"][0]["ended_how"] == (
        "exited with code 0; preempted: resumes from its checkpoint"
    )
    assert resumed_from(master, trial_id) >= 5


def test_a_restarted_master_reattaches_a_running_pod(master):
    exp, trial_id = start_trial(master, "k8s-reattach", "{steps: 25, ckpt_every: 5, sleep: 0.2}", 3)
    master.stop()
    master.start()
    assert master.wait(exp["id"], timeout=120)["state"] == "COMPLETED"
    trial = master.trial(trial_id)
    assert len(trial["runs"]) == 1, trial["runs"]  # the same Pod, never relaunched
    assert [s for s, _ in master.metrics(trial_id, "training", "loss")] == list(range(1, 26))
    logs = master.logs(trial_id)
    assert not any(line.startswith("resumed from step") for line in logs)
    assert logs.count("finished") == 1


def test_an_experiment_without_an_image_is_refused_at_submit(master):
    response = master.post_experiment(
        steps_config("k8s-no-image", "{steps: 2}", "{name: single, metric: val_loss}", None),
        CODE,
    )
    assert response.status_code == 422
    [detail] = response.json()["error"]["details"]
    assert detail["path"] == "environment.image"
    assert "is a kubernetes pool: set environment.image" in detail["message"]
