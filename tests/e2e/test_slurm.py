"""A real master with a Slurm pool (docs/backends/slurm.md's master.yaml) on the test session's
one-node cluster: a random search runs its trials as Slurm jobs, a two-slot trial runs its
ranks in one job, a job Slurm requeues resumes from its checkpoint, a cluster that does not
answer leaves the master running with the reason on its pool, and a search with an
environment.image runs its trials in that image through Podman."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.doc_blocks import block_with
from tests.e2e import master as e2e
from tests.e2e.master import CODE, Master
from tests.fixtures.slurm import NODE_CPUS, SlurmCluster

pytestmark = pytest.mark.slurm

SLURM = e2e.Pool("slurm", max_restarts=0)
DOC = Path(__file__).resolve().parents[2] / "docs" / "backends" / "slurm.md"


def doc_block(needle: str) -> str:
    return block_with(DOC, needle)


def doc_master_config(cluster: SlurmCluster) -> str:
    """The doc's master.yaml, pointed at the test cluster (its conf, its partition)."""
    block = doc_block("master.yaml")
    assert "slurm_conf: /etc/slurm/slurm.conf" in block and "partition: batch" in block
    return block.replace("/etc/slurm/slurm.conf", str(cluster.conf)).replace(
        "partition: batch", "partition: debug"
    )


@pytest.fixture(scope="module")
def master(slurm_cluster, tmp_path_factory) -> Iterator[Master]:
    home = tmp_path_factory.mktemp("slurm-master") / "home"
    m = Master(home, config=doc_master_config(slurm_cluster)).start()
    yield m
    m.stop()


def slurm_jobs(cluster: SlurmCluster) -> dict[str, str]:
    """Every job of the cluster's completion log: name -> how it ended."""
    out = cluster.run("sacct", "-c", "--noheader", "--parsable2", "--format=jobname,state")
    return dict(line.split("|", 1) for line in out.splitlines() if "|" in line)


def test_a_random_search_runs_its_trials_as_slurm_jobs(master, slurm_cluster):
    pools = {p["name"]: p for p in master.http.get("/resource-pools").json()}
    assert (pools["slurm"]["type"], pools["slurm"]["slots_total"]) == ("slurm", NODE_CPUS)
    assert (pools["slurm"]["healthy"], pools["slurm"]["problem"]) == (True, None)
    trials = e2e.random_search(master, SLURM, trials=4, timeout=60)
    jobs = slurm_jobs(slurm_cluster)
    for trial in trials:
        assert jobs[f"shipyard-trial-{trial['id']}-run-1"] == "COMPLETED"


@pytest.mark.torch
def test_a_two_slot_trial_runs_its_ranks_in_one_slurm_job(master, slurm_cluster):
    # The doc's experiment, with a training script of the tests' own.
    config = doc_block("name: on-slurm").replace("python3 train.py", "python3 all_reduce.py")
    trial = e2e.two_rank_all_reduce(master, config, CODE)
    jobs = slurm_jobs(slurm_cluster)
    assert jobs[f"shipyard-trial-{trial['id']}-run-1"] == "COMPLETED"


def test_a_job_slurm_requeues_resumes_from_its_checkpoint(master, slurm_cluster):
    exp, trial_id = SLURM.start_trial(
        master, "slurm-requeued", "{steps: 40, ckpt_every: 5, sleep: 0.1}", 12
    )
    job_name = f"shipyard-trial-{trial_id}-run-1"
    job_id = slurm_cluster.run("squeue", "--noheader", f"--name={job_name}", "--format=%i")
    slurm_cluster.run("scontrol", "requeue", job_id.strip())

    assert master.wait(exp["id"], timeout=90)["state"] == "COMPLETED"
    trial = master.trial(trial_id)
    assert [r["ended_how"] for r in trial["runs"]] == [
        f"Slurm requeued job {job_id.strip()}; resumes from its checkpoint",
        "exited with code 0; completed",
    ]
    assert trial["restarts"] == 0  # the engine's preemption is not a failure
    assert e2e.rerun_from_checkpoint(master, trial) >= 10
    jobs = slurm_jobs(slurm_cluster)
    assert jobs[job_name] == "CANCELLED"  # Slurm's second copy never ran the trial
    assert jobs[f"shipyard-trial-{trial_id}-run-2"] == "COMPLETED"


def test_a_paused_trial_checkpoints_and_resumes_in_a_new_job(master, slurm_cluster):
    exp, trial_id = SLURM.start_trial(master, "slurm-paused", e2e.PAUSABLE, 8)
    # The trial sees the pause through should_preempt(), leaves at a step and exits 0.
    e2e.pause_then_resume(master, exp["id"], trial_id)
    jobs = slurm_jobs(slurm_cluster)
    assert jobs[f"shipyard-trial-{trial_id}-run-1"] == "COMPLETED"
    assert jobs[f"shipyard-trial-{trial_id}-run-2"] == "COMPLETED"


def test_a_trial_that_ignores_the_pause_is_stopped_by_scancel_and_resumes(master, slurm_cluster):
    # It never looks at should_preempt(): after preemption_timeout the master stops its job
    # with scancel --signal=TERM, and the next run resumes from its latest checkpoint.
    exp, trial_id = SLURM.start_trial(
        master,
        "slurm-scancel",
        # 6 s of training: scancel (preemption_timeout 1 s) comes well before the end even
        # on a loaded machine (with 3 s the first run once reached its last checkpoint)
        "{steps: 60, ckpt_every: 5, sleep: 0.1, ignore_preempt: true}",
        8,
        extra="preemption_timeout: 1\n",
    )
    e2e.pause_then_resume(
        master,
        exp["id"],
        trial_id,
        first_run_ended="killed by signal 15; preempted: resumes from its checkpoint",
    )
    assert "preempted at step" not in " ".join(master.logs(trial_id))


def test_a_master_whose_slurm_cluster_does_not_answer_starts_and_says_why(slurm_cluster, tmp_path):
    dead = slurm_cluster.dead_conf()
    config = doc_master_config(slurm_cluster).replace(str(slurm_cluster.conf), str(dead))
    m = Master(tmp_path / "home", config=config).start()
    try:
        pools = {p["name"]: p for p in m.http.get("/resource-pools").json()}
        assert pools["default"]["healthy"] and pools["default"]["slots_total"] == 2
        slurm = pools["slurm"]
        assert (slurm["healthy"], slurm["slots_total"]) == (False, 0)
        assert slurm["problem"].startswith(f"slurmctld (SLURM_CONF={dead}) does not answer: ")
    finally:
        m.stop()


@pytest.fixture(scope="module")
def image_master(slurm_cluster, podman_env, tmp_path_factory) -> Iterator[Master]:
    """A master of the doc's pool for images, its podman settings the session's podman root."""
    block = doc_block("engine_env")
    storage = "        CONTAINERS_STORAGE_CONF: /shared/containers/storage.conf\n"
    assert storage in block and "slurm_conf: /etc/slurm/slurm.conf" in block
    ours = "".join(f"        {name}: {value}\n" for name, value in podman_env.items())
    config = block.replace(storage, ours).replace("/etc/slurm/slurm.conf", str(slurm_cluster.conf))
    m = Master(tmp_path_factory.mktemp("slurm-images") / "home", config=config).start()
    yield m
    m.stop()


@pytest.mark.containers
def test_a_search_with_an_image_runs_its_trials_in_it_on_slurm(
    slurm_cluster, image_master, podman_env, podman_marked_image
):
    # The doc's experiment: its trials read a file only the image has, then train.
    config = e2e.image_search(doc_block("name: in-an-image"), podman_marked_image)
    done = image_master.wait(image_master.create(config, CODE)["id"], timeout=90)
    trials, image_id = e2e.ran_in_image(image_master, done, podman_marked_image, podman_env)
    jobs = slurm_jobs(slurm_cluster)
    for trial in trials:
        assert jobs[f"shipyard-trial-{trial['id']}-run-1"] == "COMPLETED"
    shown = image_master.cli("trial", "describe", done["trials"][0]["id"])
    assert shown.returncode == 0, shown.stderr
    assert f"image_id={image_id}" in shown.stdout
