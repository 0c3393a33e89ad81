"""A real master with a Ray pool (docs/backends/ray.md's master.yaml) on the test session's Ray
head: a random search runs its trials as Ray actors, a two-slot trial runs its ranks in one
actor, a killed Ray worker restarts its trial from the checkpoint, a paused trial resumes
in a new actor from its checkpoint in S3 (no shared path), a restarted master
re-attaches a running trial, a search with an environment.image runs its trials in that
image through Podman, and a cluster that does not answer leaves the master running with the
reason on its pool and its waiting trials."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.doc_blocks import block_with
from tests.e2e import master as e2e
from tests.e2e.master import CODE, Master
from tests.fixtures import procs
from tests.fixtures.ray_cluster import HEAD_CPUS, RayCluster, free_port

pytestmark = pytest.mark.ray

RAY = e2e.Pool("ray")
DOC = Path(__file__).resolve().parents[2] / "docs" / "backends" / "ray.md"


def doc_block(needle: str) -> str:
    return block_with(DOC, needle)


def doc_master_config(address: str) -> str:
    block = doc_block("master.yaml")
    assert "address: 10.0.0.5:6379" in block
    return block.replace("10.0.0.5:6379", address)


def doc_image_master_config(address: str, podman_env: dict[str, str]) -> str:
    """The doc's master.yaml for images: its pool on this cluster, podman's settings ours."""
    block = doc_block("engine_env")
    storage = "        CONTAINERS_STORAGE_CONF: /shared/containers/storage.conf\n"
    assert storage in block and "address: 10.0.0.5:6379" in block
    ours = "".join(f"        {name}: {value}\n" for name, value in podman_env.items())
    return block.replace(storage, ours).replace("10.0.0.5:6379", address)


@pytest.fixture(scope="module")
def master(ray_cluster: RayCluster, podman_env, tmp_path_factory) -> Iterator[Master]:
    """One master for the module: the doc's pool for images is its plain pool with a
    containers section, so the trials without an image run on it too."""
    home = tmp_path_factory.mktemp("ray-master") / "home"
    m = Master(home, config=doc_image_master_config(ray_cluster.address, podman_env)).start()
    yield m
    m.stop()


def keeper_of(trial_id: int) -> tuple[int, int]:
    """(keeper pid, its parent: the Ray worker running the trial's actor)."""

    def keepers_parent(proc: Path) -> int | None:
        if not any("ray/keeper.py" in arg for arg in procs.argv(proc)):
            return None
        if procs.environ(proc).get("SHIPYARD_TRIAL_ID") != str(trial_id):
            return None
        return int(procs.stat_fields(proc)[1])

    found = procs.collect(keepers_parent)
    assert found, f"no keeper process of trial {trial_id}"
    return next(iter(found.items()))


def test_a_random_search_runs_its_trials_as_ray_actors(master):
    pools = {p["name"]: p for p in json.loads(master.cli("pool", "list", "--json").stdout)}
    assert (pools["ray"]["type"], pools["ray"]["slots_total"]) == ("ray", HEAD_CPUS)
    assert (pools["ray"]["healthy"], pools["ray"]["problem"]) == (True, None)
    for trial in e2e.random_search(master, RAY, trials=4, timeout=90):
        [run] = trial["runs"]
        assert run["environment"]["actor"] == f"shipyard-ray-trial-{trial['id']}-run-1"


@pytest.mark.torch
def test_a_two_slot_trial_runs_its_ranks_in_one_actor(master):
    config = doc_block("name: on-ray").replace("python3 train.py", "python3 all_reduce.py")
    e2e.two_rank_all_reduce(master, config, CODE)


def test_a_killed_ray_worker_restarts_the_trial_from_its_checkpoint(master):
    exp, trial_id = RAY.start_trial(
        master, "ray-killed", "{steps: 40, ckpt_every: 5, sleep: 0.1}", steps=12
    )
    keeper, worker = keeper_of(trial_id)
    os.kill(worker, signal.SIGKILL)

    assert master.wait(exp["id"], timeout=90)["state"] == "COMPLETED"
    trial = master.trial(trial_id)
    assert len(trial["runs"]) == 2 and trial["state"] == "COMPLETED"
    assert not procs.exists(keeper), "the first run's processes outlived the worker"
    assert e2e.rerun_from_checkpoint(master, trial) >= 10


def test_a_paused_trial_checkpoints_into_s3_and_resumes_in_a_new_actor(
    master, s3_server, s3_bucket
):
    """No shared path for checkpoints: the actor writes them to the bucket, and the next run
    (a new actor) restores from it."""
    storage = yaml.safe_dump({"checkpoint_storage": s3_server.storage(s3_bucket, "ray")})
    exp, trial_id = RAY.start_trial(master, "ray-paused", e2e.PAUSABLE, 8, extra=storage)
    trial = e2e.pause_then_resume(master, exp["id"], trial_id)
    first, second = (run["environment"]["actor"] for run in trial["runs"])
    assert first.endswith("-run-1") and second.endswith("-run-2")
    kept = master.http.get(f"/experiments/{exp['id']}/checkpoints").json()
    assert kept and all(c["storage_path"].startswith(f"s3://{s3_bucket}/ray/") for c in kept)
    listed = s3_server.client().list_objects_v2(Bucket=s3_bucket, Prefix="ray/")
    stored = {o["Key"].split("/")[1] for o in listed.get("Contents", [])}
    assert {c["uuid"] for c in kept} <= stored


def test_a_restarted_master_reattaches_a_running_ray_trial(master):
    exp, trial_id = RAY.start_trial(
        master, "ray-reattach", "{steps: 30, ckpt_every: 5, sleep: 0.2}", steps=3
    )
    keeper, _ = keeper_of(trial_id)
    e2e.restart_master(master, exp["id"], trial_id, timeout=90)  # the same actor, never relaunched
    assert not procs.exists(keeper)


@pytest.mark.containers
def test_a_search_with_an_image_runs_its_trials_in_it_on_ray(
    ray_cluster, master, podman_env, podman_marked_image
):
    # The doc's experiment: its trials read a file only the image has, then train.
    config = e2e.image_search(doc_block("name: in-an-image"), podman_marked_image)
    done = master.wait(master.create(config, CODE)["id"], timeout=90)
    trials, _ = e2e.ran_in_image(master, done, podman_marked_image, podman_env)
    for trial in trials:
        assert trial["latest_checkpoint"], "no checkpoint through the mounted storage"
        [run] = trial["runs"]
        assert run["environment"]["actor"] == f"shipyard-ray-trial-{trial['id']}-run-1"
        label = f"label=shipyard.trial-id={trial['id']}"
        left = subprocess.run(
            ["podman", "ps", "--all", "--quiet", "--filter", label],
            capture_output=True,
            text=True,
            env={**os.environ, **podman_env},
            check=True,
        )
        assert left.stdout == "", "the trial's container was not removed"


def test_a_master_whose_ray_cluster_does_not_answer_starts_and_says_why(tmp_path):
    dead = f"127.0.0.1:{free_port()}"
    m = Master(tmp_path / "home", config=doc_master_config(dead)).start()
    try:
        pools = {p["name"]: p for p in json.loads(m.cli("pool", "list", "--json").stdout)}
        assert pools["default"]["healthy"] and pools["default"]["slots_total"] == 2
        ray = pools["ray"]
        # its configured `slots: 4`, until the cluster answers
        assert (ray["healthy"], ray["slots_total"]) == (False, 4)
        assert ray["problem"].startswith(f"Ray cluster at {dead} does not answer: "), ray
        # A trial for it is accepted and waits, saying why.
        waiting = m.create(RAY.config("to-dead", "{steps: 2}"), CODE)
        jobs = m.wait_for(
            lambda: json.loads(m.cli("job", "list", "--json").stdout), what="the queued trial"
        )
        (job,) = [j for j in jobs if j["experiment_id"] == waiting["id"]]
        assert job["state"] == "QUEUED", job
        assert job["reason"].startswith(
            f"its pool 'ray' cannot run trials now: Ray cluster at {dead}"
        )
        local = m.create(e2e.Pool("default").config("local", "{steps: 4, ckpt_every: 2}"), CODE)
        assert m.wait(local["id"], timeout=60)["state"] == "COMPLETED"
    finally:
        m.stop()
