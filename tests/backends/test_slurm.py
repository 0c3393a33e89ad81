"""The Slurm backend on a real one-node cluster (tests/fixtures/slurm.py): what its sbatch asks
for, what the job's environment holds, a job Slurm requeues, a cluster that does not answer,
trials in a container image through Podman (the session's podman root, tests/fixtures/
containers.py). The Backend contract itself (exit codes, output, SIGTERM/SIGKILL, recovery,
a two-slot gang) runs against Slurm in test_contract.py."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from shipyard.backends.base import Handle, RunStatus, Slot, TrialLaunchSpec
from shipyard.backends.local.containers import ContainerError
from shipyard.backends.slurm.backend import SlurmBackend
from shipyard.backends.slurm.options import SlurmOptions
from shipyard.backends.slurm.script import JobFiles, sbatch_args
from shipyard.common.errors import ConfigError
from shipyard.server.pools import load_master_config
from tests.backends.engine import Engine
from tests.backends.test_contract import (
    IGNORES_TERM,
    TERM_HANDLER,
    launch,
    output,
    wait_exit,
    wait_output,
)
from tests.fixtures import procs
from tests.fixtures.containers import MARKED_IMAGE, MARKER, MARKER_TEXT
from tests.fixtures.poll import PollTimeout, poll
from tests.fixtures.slurm import (
    MULTI_PARTITION,
    NODE_CPUS,
    SMALL_NODE_CPUS,
    SlurmCluster,
    free_ports,
    image_options,
)

pytestmark = pytest.mark.slurm


def backend_with(cluster: SlurmCluster, **options) -> SlurmBackend:
    return SlurmBackend(SlurmOptions(slurm_conf=str(cluster.conf), **options), pool="slurm")


def job_fields(cluster: SlurmCluster, job_id: int) -> dict[str, str]:
    """`scontrol show job` as a dict: what Slurm made of the submission."""
    out = cluster.run("scontrol", "--oneliner", "show", "job", str(job_id))
    return dict(word.split("=", 1) for word in out.split() if "=" in word)


def settled_job_fields(cluster: SlurmCluster, job_id: int, timeout_s: float = 30) -> dict[str, str]:
    """job_fields once Slurm is done ending the job (COMPLETING is on the way to its end)."""
    return poll(
        lambda: job_fields(cluster, job_id),
        f"Slurm to finish ending job {job_id}",
        until=lambda job: job["JobState"] != "COMPLETING",
        timeout_s=timeout_s,
        every_s=0.1,
    )


def test_capacity_is_the_partitions_cpus_or_gpus(slurm_cluster):
    cpus = backend_with(slurm_cluster, slot_type="cpu").capacity()
    assert [s.id for s in cpus] == [f"cpu{i}" for i in range(NODE_CPUS)]
    assert {(s.kind, s.device) for s in cpus} == {("cpu", "slurm:default")}
    assert backend_with(slurm_cluster, slot_type="cpu").health() is None
    if slurm_cluster.gpus:
        gpus = backend_with(slurm_cluster, slot_type="gpu", partition="other").capacity()
        assert [(s.id, s.kind, s.device) for s in gpus] == [
            ("gpu0", "gpu", "slurm:other"),
            ("gpu1", "gpu", "slurm:other"),
        ]
    wrong = backend_with(slurm_cluster, slot_type="cpu", partition="nope")
    assert wrong.capacity() == []
    assert wrong.health() == (
        "Slurm has no nodes in partition 'nope' (partitions: debug, multi, other); "
        "set `partition` in the pool"
    )


def test_sbatch_asks_for_the_pools_options_and_the_trials_cpus(slurm_cluster, slurm_engine):
    backend = backend_with(
        slurm_cluster,
        slot_type="cpu",
        partition="other",
        account="research",
        time_limit="1:30:00",
        sbatch_args=["--comment=from-sbatch-args", "--nice=7"],
    )
    handle, name = launch(
        slurm_engine, backend, "import os; print('cpus', os.environ['SLURM_CPUS_PER_TASK'])", 3
    )
    assert wait_exit(backend, handle).exit_code == 0
    assert output(backend, handle) == "cpus 3\n"
    job = job_fields(slurm_cluster, handle.data["job_id"])
    assert job["JobName"] == "shipyard-trial-1-run-1"
    assert job["Partition"] == "other"
    assert job["Account"] == "research"
    assert job["TimeLimit"] == "01:30:00"
    assert job["Comment"] == "from-sbatch-args"
    assert job["Nice"] == "7"
    assert (job["NumNodes"], job["NumTasks"], job["CPUs/Task"]) == ("1", "1", "3")
    assert job["Requeue"] == "1"
    assert job["StdOut"] == str(slurm_engine.workdir / f"{name}.log")


def test_qos_is_passed_to_slurm(slurm_cluster, slurm_engine):
    # Without an accounting database Slurm accepts and drops a QOS (scontrol shows none):
    # the job runs, and the argument is checked where it is made.
    backend = backend_with(slurm_cluster, slot_type="cpu", qos="high")
    handle, _ = launch(slurm_engine, backend, "pass")
    assert wait_exit(backend, handle).exit_code == 0
    spec = spec_for(slurm_engine, "pass", {}, "qos")
    args = sbatch_args(spec, JobFiles.for_log(spec.log_path or ""), backend.options)
    assert "--qos=high" in args and args[-1].endswith("qos.sbatch")


def test_a_submission_slurm_refuses_fails_the_launch_with_sbatchs_words(
    slurm_cluster, slurm_engine
):
    backend = backend_with(slurm_cluster, slot_type="cpu", sbatch_args=["--no-such-flag"])
    with pytest.raises(RuntimeError) as err:
        launch(slurm_engine, backend, "pass")
    assert str(err.value).startswith(
        "the Slurm pool 'slurm' could not submit the trial: sbatch failed: "
    )
    assert "--no-such-flag" in str(err.value)


def test_gpu_slots_ask_for_the_gres_and_name_the_devices_slurm_gave(slurm_cluster, slurm_engine):
    if not slurm_cluster.gpus:
        pytest.skip("the test cluster has no fake GPUs (mknod needs root)")
    backend = backend_with(slurm_cluster, slot_type="gpu")
    handle, _ = launch(
        slurm_engine,
        backend,
        """
        import os
        print(os.environ["CUDA_VISIBLE_DEVICES"], os.environ["SHIPYARD_SLOT_IDS"])
        """,
        slots=2,
    )
    job = job_fields(slurm_cluster, handle.data["job_id"])
    assert job["TresPerNode"] == "gres:gpu:2"
    assert wait_exit(backend, handle).exit_code == 0
    assert output(backend, handle) == "0,1 gpu0,gpu1\n"


def spec_for(engine: Engine, code: str, env: dict[str, str], name: str) -> TrialLaunchSpec:
    script = engine.workdir / f"{name}.py"
    script.write_text(code)
    return TrialLaunchSpec(
        trial_id=7,
        run_id=2,
        argv=[sys.executable, str(script)],
        env={"PATH": os.environ["PATH"], **env},
        workdir=str(engine.workdir),
        slots=[Slot("slurm/cpu4", "cpu", "slurm:default", 4)],
        log_path=str(engine.workdir / f"{name}.log"),
    )


def test_the_job_gets_the_trials_environment_quoted_and_private(
    slurm_cluster, slurm_engine, monkeypatch
):
    monkeypatch.setenv("SHIPYARD_DB_URL", "sqlite:///master-only.db")  # the master's own
    backend = backend_with(slurm_cluster, slot_type="cpu")
    trap = slurm_engine.workdir / "pwned"
    tricky = f'it\'s "quoted" $HOME `touch {trap}` $(touch {trap}); touch {trap}\nline 2'
    spec = spec_for(
        slurm_engine,
        "import json, os\n"
        "keys = ('TRICKY', 'SHIPYARD_SLOT_IDS', 'SHIPYARD_DB_URL', 'SLURM_JOB_ID')\n"
        "print(json.dumps({k: os.environ.get(k) for k in keys}))\n",
        {"TRICKY": tricky, "SHIPYARD_SLOT_IDS": "slurm/cpu4"},
        "env",
    )
    handle = backend.launch(spec)
    assert wait_exit(backend, handle).exit_code == 0
    seen = json.loads(output(backend, handle))
    assert seen == {
        "TRICKY": tricky,
        "SHIPYARD_SLOT_IDS": "cpu0",  # what the launcher reads: the job's own CPUs
        "SHIPYARD_DB_URL": None,
        "SLURM_JOB_ID": str(handle.data["job_id"]),
    }
    assert not trap.exists()
    script = Path(handle.data["script"])
    assert stat.S_IMODE(script.stat().st_mode) == 0o600  # the environment may hold secrets


def test_a_trial_no_set_of_nodes_holds_evenly_is_refused_clearly(slurm_cluster, slurm_engine):
    backend = backend_with(slurm_cluster, slot_type="cpu")
    spec = spec_for(slurm_engine, "pass", {}, "big")
    spec.slots = [Slot(f"cpu{i}", "cpu", "slurm:default", i) for i in range(NODE_CPUS + 1)]
    with pytest.raises(ConfigError) as err:
        backend.launch(spec)
    assert err.value.message == (
        f"a trial of {NODE_CPUS + 1} slots does not fit in the Slurm pool 'slurm': no set of "
        f"its nodes holds an equal share each (nodes have {NODE_CPUS} CPUs); choose "
        "resources.slots_per_trial to divide evenly"
    )


SPANNING = """
import os, socket
import torch, torch.distributed as dist
dist.init_process_group("gloo")
total = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(total)
print("rank", dist.get_rank(), "of", dist.get_world_size(), "on", os.environ["SLURMD_NODENAME"],
      "node rank", os.environ["SHIPYARD_NODE_RANK"], "slots", os.environ["SHIPYARD_SLOT_IDS"],
      "sum", int(total.item()), flush=True)
dist.barrier()  # leave together: gloo may abort a rank whose peers tore down first
dist.destroy_process_group()
"""


MPI_SPANNING = """
import os
from mpi4py import MPI
comm = MPI.COMM_WORLD
total = comm.allreduce(comm.rank + 1)
print("rank", comm.rank, "of", comm.size, "on", os.environ["SLURMD_NODENAME"],
      "node rank", os.environ["SHIPYARD_NODE_RANK"], "slots", os.environ["SHIPYARD_SLOT_IDS"],
      "sum", total, flush=True)
"""


@pytest.mark.parametrize(
    ("launcher", "code"),
    [
        pytest.param("shipyard.launch.torch_distributed", SPANNING, marks=pytest.mark.torch),
        # One mpirun on the first node starts Open MPI's daemon on the other through its
        # launcher: no ssh between Slurm's nodes.
        pytest.param("shipyard.launch.mpi", MPI_SPANNING, marks=pytest.mark.mpi),
    ],
)
def test_a_trial_larger_than_a_node_spans_nodes_through_srun(
    slurm_cluster, slurm_engine, launcher, code
):
    backend = backend_with(slurm_cluster, slot_type="cpu", partition=MULTI_PARTITION)
    assert len(backend.capacity()) == 2 * SMALL_NODE_CPUS
    handle, _ = launch(
        slurm_engine,
        backend,
        code,
        slots=2 * SMALL_NODE_CPUS,
        argv=["{python}", "-m", launcher, "{python}", "{script}"],
    )
    state = wait_exit(backend, handle, timeout=90)
    text = output(backend, handle)
    assert (state.status, state.exit_code) == (RunStatus.EXITED, 0), text
    job = job_fields(slurm_cluster, handle.data["job_id"])
    assert (job["NumNodes"], job["NumTasks"], job["CPUs/Task"]) == ("2", "2", "2")
    world = 2 * SMALL_NODE_CPUS
    ranks = {}
    for line in text.splitlines():
        if " sum " in line:
            words = line.split("] ", 1)[1].split()
            assert words[3] == str(world), line  # one world of every rank
            ranks[int(words[1])] = (words[5], words[8], words[10], words[12])
    assert sorted(ranks) == list(range(world)), text
    # Ranks 0-1 on the first node (node rank 0), 2-3 on the second, each on its node's own
    # slot; all summed 1+2+3+4.
    assert {rank: info[1] for rank, info in ranks.items()} == {0: "0", 1: "0", 2: "1", 3: "1"}
    assert [ranks[rank][2] for rank in range(world)] == ["cpu0", "cpu1"] * 2
    assert {info[0] for info in ranks.values()} == {"n2", "n3"}
    assert ranks[0][0] != ranks[2][0]
    assert {info[3] for info in ranks.values()} == {str(world * (world + 1) // 2)}


RUNS_ONCE = """
import os, time
runs = os.path.join(os.environ["CONTRACT_DIR"], os.environ["CONTRACT_NAME"] + ".runs")
with open(runs, "a") as f:  # one line a run of the trial's code
    f.write(os.environ.get("SLURM_RESTART_COUNT", "0") + "\\n")
print("training", flush=True)
time.sleep(600)
"""


def requeued_trial(cluster: SlurmCluster, engine: Engine) -> tuple[SlurmBackend, Handle, str]:
    """A running trial whose job `scontrol requeue` took back: the backend, handle, name."""
    backend = backend_with(cluster, slot_type="cpu")
    handle, name = launch(engine, backend, RUNS_ONCE)
    wait_output(backend, handle, "training")
    cluster.run("scontrol", "requeue", str(handle.data["job_id"]))
    return backend, handle, name


def test_a_job_slurm_requeues_is_preempted_and_its_second_copy_cancelled(
    slurm_cluster, slurm_engine
):
    backend, handle, name = requeued_trial(slurm_cluster, slurm_engine)
    job_id = handle.data["job_id"]
    state = wait_exit(backend, handle, timeout=30)
    assert (state.status, state.reason) == (RunStatus.PREEMPTED, f"Slurm requeued job {job_id}")
    assert backend.poll(handle) == state
    job = settled_job_fields(slurm_cluster, job_id)
    assert (job["JobState"], job["Restarts"]) == ("CANCELLED", "1")
    # A restarted master agrees (the run's .preempted file outlives Slurm's memory).
    assert backend_with(slurm_cluster, slot_type="cpu").poll(handle) == state
    assert (slurm_engine.workdir / f"{name}.runs").read_text() == "0\n"


def test_a_copy_slurm_runs_again_while_nobody_polls_does_not_run_the_trial(
    slurm_cluster, slurm_engine
):
    backend, handle, name = requeued_trial(slurm_cluster, slurm_engine)
    # Slurm starts the copy once its begin time (a few seconds) has come; no one cancels it.
    poll(
        lambda: output(backend, handle),
        "Slurm's copy of the job to say it does not run",
        until=lambda text: "this copy does not run" in text,
        timeout_s=30,
        every_s=0.2,
    )
    restarted = backend_with(slurm_cluster, slot_type="cpu")
    state = restarted.poll(handle)
    job_id = handle.data["job_id"]
    assert (state.status, state.reason) == (RunStatus.PREEMPTED, f"Slurm requeued job {job_id}")
    assert (slurm_engine.workdir / f"{name}.runs").read_text() == "0\n"


def test_a_master_that_died_before_recording_the_job_finds_it(slurm_cluster, slurm_engine):
    backend = backend_with(slurm_cluster, slot_type="cpu")
    handle, _ = launch(slurm_engine, backend, "print('found')")
    restarted = backend_with(slurm_cluster, slot_type="cpu")
    found = restarted.find_launch(handle.data["log_path"])
    assert found is not None and found.data["job_id"] == handle.data["job_id"]
    assert wait_exit(restarted, found).exit_code == 0
    assert restarted.find_launch(str(slurm_engine.workdir / "never-launched.log")) is None


SLURM_TOOLS = ("sbatch", "squeue", "scancel", "scontrol", "sinfo", "sacct")


def counting_bin_dir(directory: Path) -> Path:
    """A bin_dir whose Slurm commands note each call in calls.log, then run the real one."""
    directory.mkdir()
    for tool in SLURM_TOOLS:
        real = shutil.which(tool)
        wrapper = directory / tool
        wrapper.write_text(f'#!/bin/sh\necho {tool} >> {directory}/calls.log\nexec {real} "$@"\n')
        wrapper.chmod(0o755)
    return directory


def test_polling_many_trials_costs_one_squeue_per_interval(slurm_cluster, slurm_engine, tmp_path):
    bin_dir = counting_bin_dir(tmp_path / "bin")
    backend = backend_with(slurm_cluster, slot_type="cpu", bin_dir=str(bin_dir))
    handles = [launch(slurm_engine, backend, RUNS_ONCE)[0] for _ in range(4)]
    for handle in handles:
        wait_output(backend, handle, "training")
    calls = bin_dir / "calls.log"
    before = calls.read_text().split()
    started = time.perf_counter()
    for _ in range(10):  # ten rounds of the master's poll of every trial, back to back
        assert all(backend.poll(h).status == RunStatus.RUNNING for h in handles)
    per_poll_ms = (time.perf_counter() - started) * 1000 / 40
    made = calls.read_text().split()[len(before) :]
    assert set(made) <= {"squeue"} and len(made) <= 2, made
    assert per_poll_ms < 10, per_poll_ms
    for handle in handles:
        backend.terminate(handle, grace_s=0)
    for handle in handles:
        assert wait_exit(backend, handle).status in (RunStatus.EXITED, RunStatus.LOST)


def test_an_unreachable_cluster_gives_no_slots_and_says_why(slurm_cluster, tmp_path):
    started = time.monotonic()
    dead = SlurmBackend(
        SlurmOptions(slot_type="cpu", slurm_conf=str(slurm_cluster.dead_conf())), pool="slurm"
    )
    assert dead.capacity() == []
    problem = dead.health()
    assert problem is not None
    assert problem.startswith(f"slurmctld (SLURM_CONF={slurm_cluster.root}/dead/slurm.conf)")
    assert "does not answer: Slurmctld(primary) at" in problem and "is DOWN" in problem
    # A trial it ran before keeps its exit code, and one without is not declared lost.
    ended = tmp_path / "ended.log"
    ended.with_suffix(".exit").write_text("3\n")
    running = tmp_path / "running.log"
    handles = [{"job_id": i, "log_path": str(p)} for i, p in enumerate((ended, running))]
    assert dead.recover(handles[0]) is not None
    assert dead.poll(dead.recover(handles[0])).exit_code == 3
    assert dead.poll(dead.recover(handles[1])).status == RunStatus.RUNNING
    assert time.monotonic() - started < 5

    missing = SlurmBackend(
        SlurmOptions(slot_type="cpu", slurm_conf=str(tmp_path / "no.conf")), pool="slurm"
    )
    assert missing.capacity() == []
    assert missing.health() == f"slurm_conf {tmp_path / 'no.conf'} is not a file"


def test_bad_options_name_the_field(tmp_path):
    config = tmp_path / "master.yaml"
    config.write_text(
        "resource_pools:\n"
        "  - pool_name: hpc\n"
        "    type: slurm\n"
        "    time_limit: 2 hours\n"
        "    gres: 'gpu a100'\n"
        "    containers: {runtime: apptainer, extra_run_args: [--rm]}\n"
    )
    with pytest.raises(ConfigError) as err:
        load_master_config(config)
    paths = {d["path"]: d["message"] for d in err.value.details}
    assert set(paths) == {
        "resource_pools.0.time_limit",
        "resource_pools.0.gres",
        "resource_pools.0.containers.runtime",
        "resource_pools.0.containers.extra_run_args",
    }
    assert "String should match pattern" in paths["resource_pools.0.time_limit"]
    assert (
        "apptainer is not supported yet; use podman" in paths["resource_pools.0.containers.runtime"]
    )
    assert "--rm is set by Shipyard" in paths["resource_pools.0.containers.extra_run_args"]


# -- trials in a container image --------------------------------------------------------------


def podman(env: dict[str, str], *args: str) -> str:
    return subprocess.run(
        ["podman", *args], capture_output=True, text=True, env={**os.environ, **env}, check=True
    ).stdout


def launch_gang(
    cluster: SlurmCluster, engine: Engine, podman_env: dict[str, str], code: str
) -> tuple[SlurmBackend, Handle, str]:
    """``code`` as the 4 ranks (2 a node, torch_distributed's launcher) of a trial in the
    image on the two small nodes: the backend, handle and trial name."""
    backend = SlurmBackend(image_options(cluster, podman_env, partition=MULTI_PARTITION), "s")
    handle, name = launch(
        engine,
        backend,
        code,
        slots=2 * SMALL_NODE_CPUS,
        argv=["{python}", "-m", "shipyard.launch.torch_distributed", "{python}", "{script}"],
    )
    return backend, handle, name


@pytest.mark.containers
def test_a_gang_runs_every_rank_in_the_image_on_each_of_its_nodes(
    slurm_cluster, slurm_image_engine, podman_env
):
    code = f"""
        import os
        marker = open({MARKER!r}).read().strip()
        print("rank", os.environ["RANK"], "node", os.environ["SHIPYARD_NODE_RANK"],
              "slots", os.environ["SHIPYARD_SLOT_IDS"], "marker", marker, flush=True)
        """
    backend, handle, _ = launch_gang(slurm_cluster, slurm_image_engine, podman_env, code)
    state = wait_exit(backend, handle, timeout=90)
    text = output(backend, handle)
    assert (state.status, state.exit_code) == (RunStatus.EXITED, 0), text
    ranks = sorted(line.split("] ", 1)[1] for line in text.splitlines() if " marker " in line)
    assert ranks == [
        f"rank {rank} node {rank // 2} slots cpu{rank % 2} marker {MARKER_TEXT}"
        for rank in range(4)
    ]
    image_id = json.loads(podman(podman_env, "image", "inspect", MARKED_IMAGE))[0]["Id"]
    environment = handle.data[Handle.ENVIRONMENT]
    assert (environment["runtime"], environment["image"]) == ("podman", MARKED_IMAGE)
    assert (environment["image_id"], environment["job_id"]) == (image_id, handle.data["job_id"])
    assert environment["image_digest"].startswith("sha256:")


@pytest.mark.containers
def test_a_trial_in_an_image_gets_its_environment_and_no_secret_in_a_file(
    slurm_cluster, slurm_image_engine, podman_env
):
    backend = SlurmBackend(image_options(slurm_cluster, podman_env), pool="slurm")
    tricky = 'it\'s "quoted" $HOME\nline 2'
    keys = ("TRICKY", "API_KEY", "SHIPYARD_SLOT_IDS", "CUDA_VISIBLE_DEVICES", "SLURM_JOB_ID")
    code = f"import json, os\nprint(json.dumps({{k: os.environ.get(k) for k in {keys}}}))\n"
    spec = spec_for(
        slurm_image_engine,
        code,
        {
            "TRICKY": tricky,
            "API_KEY": "s3cret-value",
            "SHIPYARD_MASK_ENV": "API_KEY",
            "CUDA_VISIBLE_DEVICES": "7",  # the master's: not the node's
        },
        "image-env",
    )
    spec.argv = ["python3", spec.argv[1]]  # the image's python3, on the image's PATH
    del spec.env["PATH"]
    spec.slots = [Slot(f"cpu{i}", "cpu", "slurm:default", i) for i in (3, 5)]
    spec.image = MARKED_IMAGE
    handle = backend.launch(spec)
    state = wait_exit(backend, handle)
    assert (state.status, state.exit_code) == (RunStatus.EXITED, 0), output(backend, handle)
    assert json.loads(output(backend, handle)) == {
        "TRICKY": tricky,
        "API_KEY": "s3cret-value",
        "SHIPYARD_SLOT_IDS": "cpu0,cpu1",  # the node's share, as on the host
        "CUDA_VISIBLE_DEVICES": None,
        "SLURM_JOB_ID": None,  # the job's variables stay outside
    }
    env_file = JobFiles.for_log(handle.data["log_path"]).env
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    assert "s3cret" not in env_file.read_text()  # through podman's environment, by name


@pytest.mark.containers
def test_signals_reach_a_trial_in_its_image_and_no_container_outlives_it(
    slurm_cluster, slurm_image_engine, podman_env
):
    backend = slurm_image_engine.make_backend()
    by_signal, _ = launch(
        slurm_image_engine, backend, "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)"
    )
    handler, name = launch(slurm_image_engine, backend, TERM_HANDLER)
    ignores, _ = launch(slurm_image_engine, backend, IGNORES_TERM)
    wait_output(backend, handler, "ready")
    wait_output(backend, ignores, "ready")
    backend.terminate(handler, grace_s=10)
    started = time.monotonic()
    backend.terminate(ignores, grace_s=1)

    assert wait_exit(backend, by_signal).exit_code == -15  # as Popen reports it
    assert wait_exit(backend, handler).status == RunStatus.EXITED
    assert (slurm_image_engine.workdir / f"{name}.term").read_text() == "checkpointed"
    state = wait_exit(backend, ignores, timeout=30)
    assert (state.status, state.exit_code) == (RunStatus.EXITED, -9)
    assert time.monotonic() - started < 10
    # The kill after the grace removed the container, which SIGKILL to podman would leave.
    assert podman(podman_env, "ps", "-aq", "--filter", f"ancestor={MARKED_IMAGE}").strip() == ""


@pytest.mark.containers
def test_a_gang_in_an_image_gets_sigterm_on_every_node(
    slurm_cluster, slurm_image_engine, podman_env
):
    # srun's tasks are signalled, not srun: srun would SIGKILL its tasks at once.
    code = TERM_HANDLER.replace('+ ".term"', '+ os.environ["RANK"] + ".term"')
    backend, handle, name = launch_gang(slurm_cluster, slurm_image_engine, podman_env, code)
    poll(
        lambda: output(backend, handle, final=False).count("] ready"),
        "every rank to be ready",
        until=lambda ready: ready == 4,
        timeout_s=60,
        every_s=0.1,
    )
    backend.terminate(handle, grace_s=10)
    assert wait_exit(backend, handle).status == RunStatus.EXITED
    for rank in range(4):
        assert (slurm_image_engine.workdir / f"{name}{rank}.term").read_text() == "checkpointed"


@pytest.mark.containers
def test_gpu_slots_in_an_image_are_the_gpus_slurm_gave_as_cdi_devices(
    slurm_cluster, slurm_image_engine, podman_env
):
    if not slurm_cluster.gpus:
        pytest.skip("the test cluster has no fake GPUs (mknod needs root)")
    options = image_options(slurm_cluster, podman_env, slot_type="gpu", partition="other")
    backend = SlurmBackend(options, pool="slurm")
    handle, _ = launch(
        slurm_image_engine, backend, "import os; print(os.environ['SHIPYARD_SLOT_IDS'])", slots=2
    )
    state = wait_exit(backend, handle)
    text = output(backend, handle)
    if state.exit_code == 0:  # a machine whose NVIDIA devices have a CDI spec
        assert text == "gpu0,gpu1\n"
    else:  # the fake GPUs have none: podman names the devices it was given
        assert "unresolvable CDI devices" in text, text
        assert "nvidia.com/gpu=0" in text and "nvidia.com/gpu=1" in text, text


@pytest.mark.containers
def test_an_image_the_master_cannot_find_fails_the_launch_saying_what_to_do(
    slurm_cluster, slurm_engine, podman_env
):
    spec = spec_for(slurm_engine, "pass", {}, "no-image")
    spec.image = "shipyard-test:missing"
    backend = SlurmBackend(image_options(slurm_cluster, podman_env), pool="slurm")
    with pytest.raises(ContainerError, match="image 'shipyard-test:missing' not found locally"):
        backend.launch(spec)
    no_podman = {**podman_env, "PATH": str(slurm_engine.workdir)}
    backend = SlurmBackend(image_options(slurm_cluster, no_podman), pool="slurm")
    with pytest.raises(ContainerError) as err:
        backend.launch(spec)
    assert str(err.value) == (
        "environment.image on a Slurm pool needs `podman` on the master's PATH too: the "
        "master looks up the image's id, which every node of the job then runs"
    )
    assert not JobFiles.for_log(spec.log_path or "").job_id.exists()  # nothing submitted


DOC = Path(__file__).resolve().parents[2] / "docs" / "backends" / "slurm.md"


def test_the_docs_recipe_stands_up_a_cluster_that_runs_a_job(slurm_cluster):
    """docs/backends/slurm.md's shell recipe, as written but for its two ports (free ones)."""
    [recipe] = re.findall(r"```sh\n(.*?)```", DOC.read_text(), re.S)
    ctld, slurmd = free_ports(2)
    recipe = recipe.replace("=16817", f"={ctld}").replace("=16818", f"={slurmd}")
    check = """
for i in $(seq 1 100); do [ "$(sinfo -h -o %T)" = idle ] && break; sleep 0.2; done
sbatch --wait --output=$D/hello.out --wrap='echo hello from $SLURM_JOB_ID'
cat $D/hello.out
"""
    # Where it put the cluster, printed however far it got: the test cleans up after it.
    prelude = "set -e\ntrap 'echo \"D=${D:-}\"' EXIT\n"
    done = subprocess.run(
        ["bash", "-c", prelude + recipe + check], capture_output=True, text=True, timeout=90
    )
    root = Path(done.stdout.rsplit("D=", 1)[-1].strip())
    assert root.name.startswith("slurm-") and root.parent == Path("/tmp"), done.stdout
    try:
        assert done.returncode == 0, done.stderr
        assert re.search(r"^hello from \d+$", done.stdout, re.M), done.stdout
    finally:
        env = {**os.environ, "SLURM_CONF": str(root / "slurm.conf")}
        if (root / "slurm.conf").exists():
            subprocess.run(["scontrol", "shutdown"], env=env, capture_output=True, timeout=30)
        subprocess.run(
            ["munged", "-s", f"--socket={root}/munge/munge.sock"], capture_output=True, timeout=30
        )
        # slurmctld and slurmd write their last words before the directory goes.
        try:
            poll(
                lambda: procs.find(lambda proc: any(str(root) in a for a in procs.argv(proc))),
                "the recipe's daemons to exit",
                until=lambda pids: not pids,
                timeout_s=30,
            )
        except PollTimeout as left:
            procs.kill(left.last)
        shutil.rmtree(root, ignore_errors=True)
