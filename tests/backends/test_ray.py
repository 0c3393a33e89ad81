"""The Ray backend beyond the contract suite: code travels without a shared path, a 2-slot
trial holds its slots on one node, a killed actor worker loses the run and leaves no process,
an unreachable cluster is a health problem, not an exception, and a trial spread over the
session cluster's two nodes runs as one gang (placement_strategy SPREAD)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import sys
import textwrap
import time
from pathlib import Path

import pytest

from shipyard.backends.base import Handle, RunStatus, Slot, TrialLaunchSpec
from shipyard.backends.ray.backend import RayBackend
from shipyard.backends.ray.options import RayOptions
from shipyard.backends.ray.placement import DoesNotFit, bundle_count
from shipyard.common.errors import NotSupportedYet
from tests.backends.test_contract import output, wait_exit, wait_output
from tests.doc_blocks import block_with
from tests.fixtures import procs
from tests.fixtures.poll import poll
from tests.fixtures.ray_cluster import free_port

pytestmark = pytest.mark.ray


def spec_for(tmp_path, code: str, slots: list[Slot], argv=None, **env) -> TrialLaunchSpec:
    workdir = tmp_path / "context"
    workdir.mkdir()
    (workdir / "main.py").write_text(textwrap.dedent(code))
    return TrialLaunchSpec(
        trial_id=int(time.time() * 1000) % 10**9,  # a fresh actor name per test
        run_id=1,
        argv=argv or [sys.executable, "main.py"],
        env={"PYTHONUNBUFFERED": "1", "PATH": os.environ["PATH"], **env},
        workdir=str(workdir),
        slots=slots,
        log_path=str(tmp_path / "logs" / "run.log"),
    )


@pytest.fixture
def backend(ray_engine):
    backend = ray_engine.make_backend()
    yield backend
    backend.close()


def test_the_code_and_config_reach_the_trial_without_a_shared_path(backend, tmp_path):
    config = tmp_path / "config.json"
    config.write_text('{"name": "shipped"}')
    spec = spec_for(
        tmp_path,
        """
        import os, time
        while any(map(os.path.exists, os.environ["MASTER_COPIES"].split(":"))):
            time.sleep(0.05)  # until the test has deleted the master's copies
        print("cwd", os.getcwd())
        print("data", open("data.txt").read())
        print("config", open(os.environ["SHIPYARD_EXPERIMENT_CONFIG"]).read())
        print("config path", os.environ["SHIPYARD_EXPERIMENT_CONFIG"])
        """,
        backend.capacity()[:1],
        SHIPYARD_EXPERIMENT_CONFIG=str(config),
        MASTER_COPIES=f"{tmp_path / 'context'}:{config}",
    )
    (tmp_path / "context" / "data.txt").write_text("from the master")
    handle = backend.launch(spec)
    shutil.rmtree(spec.workdir)
    config.unlink()
    state = wait_exit(backend, handle)
    text = output(backend, handle)
    assert (state.status, state.exit_code) == (RunStatus.EXITED, 0), text
    assert "data from the master\n" in text
    assert 'config {"name": "shipped"}\n' in text
    assert f"cwd {spec.workdir}\n" not in text and str(config) not in text
    env = handle.data[Handle.ENVIRONMENT]
    assert env["actor"].startswith("shipyard-ray-trial-") and env["node_id"]
    backend.release(handle)


def test_a_two_slot_trial_gets_two_slot_ids_on_one_node(backend, tmp_path):
    spec = spec_for(
        tmp_path,
        """
        import os
        print("rank", os.environ["RANK"], "slots", os.environ["SHIPYARD_SLOT_IDS"], flush=True)
        """,
        backend.capacity()[:2],
        argv=[sys.executable, "-m", "shipyard.launch.torch_distributed", sys.executable, "main.py"],
    )
    handle = backend.launch(spec)
    state = wait_exit(backend, handle)
    text = output(backend, handle)
    assert (state.status, state.exit_code) == (RunStatus.EXITED, 0), text
    assert "starting 2 rank(s) on cpu0,cpu1" in text, text
    assert "[rank=0] rank 0 slots cpu0" in text and "[rank=1] rank 1 slots cpu1" in text
    backend.release(handle)


def test_a_killed_actor_worker_loses_the_run_and_leaves_no_process(backend, tmp_path):
    spec = spec_for(
        tmp_path,
        """
        import os, subprocess, time
        child = subprocess.Popen(["sleep", "600"])
        print("pids", os.getpid(), child.pid, flush=True)
        time.sleep(600)
        """,
        backend.capacity()[:1],
    )
    handle = backend.launch(spec)
    wait_output(backend, handle, "pids")
    pids = [int(p) for p in output(backend, handle, final=False).split()[1:3]]
    os.kill(handle.data["worker_pid"], signal.SIGKILL)
    state = wait_exit(backend, handle, timeout=30)
    assert state.status == RunStatus.LOST or (
        state.status == RunStatus.EXITED and state.exit_code != 0
    ), state
    poll(
        lambda: [p for p in pids if procs.alive(p)],
        "the trial's processes to end with its actor",
        until=lambda alive: not alive,
        timeout_s=10,
        every_s=0.1,
    )
    backend.release(handle)


def test_a_ray_pools_containers_section_names_its_bad_fields(tmp_path):
    """The section Slurm pools have, with the same checks (docs/backends/ray.md)."""
    from shipyard.common.errors import ConfigError
    from shipyard.server.pools import load_master_config

    config = tmp_path / "master.yaml"
    config.write_text(
        "resource_pools:\n"
        "  - pool_name: ray\n"
        "    type: ray\n"
        "    address: 127.0.0.1:6379\n"
        "    containers: {runtime: apptainer, extra_run_args: [--pull=always], engine: x}\n"
    )
    with pytest.raises(ConfigError) as err:
        load_master_config(config)
    paths = {d["path"]: d["message"] for d in err.value.details}
    assert "apptainer is not supported yet" in paths["resource_pools.0.containers.runtime"]
    assert "--pull is set by Shipyard" in paths["resource_pools.0.containers.extra_run_args"]
    assert "resource_pools.0.containers.engine" in paths


def test_an_unreachable_cluster_is_a_health_problem_not_an_exception(tmp_path):
    started = time.monotonic()
    backend = RayBackend(RayOptions(address=f"127.0.0.1:{free_port()}", timeout_s=5), pool="x")
    try:
        assert backend.capacity() == []
        reason = backend.health()
        assert reason and "does not answer" in reason and "127.0.0.1" in reason, reason
        assert time.monotonic() - started < 10
        # A run the master knew is not declared lost at once: the cluster may come back.
        handle = Handle("ray", {k: "x" for k in ("actor", "pg", "node_id", "log", "exit_file")})
        assert backend.poll(handle).status == RunStatus.RUNNING
        with pytest.raises(RuntimeError, match="cannot launch now"):
            backend.launch(spec_for(tmp_path, "", [Slot("gpu0", "gpu", "ray", 0)]))
    finally:
        backend.close()


# -- several nodes -----------------------------------------------------------------------------

LAUNCHER = [sys.executable, "-m", "shipyard.launch.torch_distributed", sys.executable, "main.py"]


@pytest.fixture
def spread(ray_cluster):
    """A pool whose multi-slot trials spread over the cluster's two nodes."""
    options = RayOptions(
        address=ray_cluster.address, slot_type="cpu", timeout_s=20, placement_strategy="SPREAD"
    )
    backend = RayBackend(options, pool="spread")
    yield backend
    backend.close()


TORCH_ALL_REDUCE = """
import os
import torch
import torch.distributed as dist

dist.init_process_group(os.environ["SHIPYARD_DIST_BACKEND"])  # env://, across nodes
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
node = os.environ["SHIPYARD_RAY_NODE_ID"]
print(f"node={node} sum={t.item():g} rank={dist.get_rank()}", flush=True)
dist.barrier()
dist.destroy_process_group()
"""

MPI_ALL_REDUCE = """
import os
from mpi4py import MPI

comm = MPI.COMM_WORLD
total = comm.allreduce(comm.rank + 1)
node = os.environ["SHIPYARD_RAY_NODE_ID"]
print(f"node={node} sum={total} rank={comm.rank}", flush=True)
"""


@pytest.mark.parametrize(
    ("launcher", "code"),
    [
        pytest.param(
            "shipyard.launch.torch_distributed", TORCH_ALL_REDUCE, marks=pytest.mark.torch
        ),
        # One mpirun in node 0's actor starts Open MPI's daemon in the other through its
        # launcher: no ssh between Ray's nodes.
        pytest.param("shipyard.launch.mpi", MPI_ALL_REDUCE, marks=pytest.mark.mpi),
    ],
)
def test_a_spread_trial_runs_one_rank_on_each_node_as_one_gang(spread, tmp_path, launcher, code):
    argv = [sys.executable, "-m", launcher, sys.executable, "main.py"]
    spec = spec_for(tmp_path, code, spread.capacity()[:2], argv=argv)
    handle = spread.launch(spec)
    state = wait_exit(spread, handle, timeout=90)
    text = output(spread, handle)
    assert (state.status, state.exit_code) == (RunStatus.EXITED, 0), text
    nodes = {}
    for rank in (0, 1):
        (line,) = [x for x in text.splitlines() if x.startswith(f"[rank={rank}] node=")]
        node, rest = line.split("node=", 1)[1].split(" ", 1)
        assert rest == f"sum=3 rank={rank}", text
        nodes[rank] = node
    assert nodes[0] != nodes[1], text  # one rank on each Ray node
    env = handle.data[Handle.ENVIRONMENT]
    assert env["node_ids"] == [nodes[0], nodes[1]] and env["nodes"] == 2
    assert env["placement_strategy"] == "SPREAD" and len(env["actors"]) == 2
    # both launchers' output is in the run's log, each line whole
    assert "node 1 of 2: ranks 1-1 of 2" in text
    spread.release(handle)


TRAPS_SIGTERM = """
import os, signal, sys, time

def stop(*_):
    print(f"rank {os.environ['RANK']} got SIGTERM", flush=True)
    sys.exit(0)

signal.signal(signal.SIGTERM, stop)
print(f"rank {os.environ['RANK']} ready", flush=True)
time.sleep(600)
"""


def test_terminate_of_a_spread_gang_sends_sigterm_to_both_nodes_ranks(spread, tmp_path):
    spec = spec_for(tmp_path, TRAPS_SIGTERM, spread.capacity()[:2], argv=LAUNCHER)
    handle = spread.launch(spec)
    wait_output(spread, handle, "[rank=0] rank 0 ready")
    wait_output(spread, handle, "[rank=1] rank 1 ready")
    spread.terminate(handle, grace_s=10)
    state = wait_exit(spread, handle)
    text = output(spread, handle)
    assert state.status == RunStatus.EXITED and state.exit_code != 0, text
    assert "[rank=0] rank 0 got SIGTERM" in text and "[rank=1] rank 1 got SIGTERM" in text
    spread.release(handle)


def test_a_new_backend_instance_recovers_a_running_spread_gang(spread, tmp_path):
    spec = spec_for(tmp_path, TRAPS_SIGTERM, spread.capacity()[:2], argv=LAUNCHER)
    handle = spread.launch(spec)
    wait_output(spread, handle, "[rank=1] rank 1 ready")
    options = spread.options.model_copy()
    again = RayBackend(options, pool="spread")  # a restarted master's
    try:
        found = again.recover(dict(handle.data))
        assert found is not None and again.poll(found).status == RunStatus.RUNNING
        again.terminate(found, grace_s=10)
        state = wait_exit(again, found)
        text = output(again, found)
        assert state.status == RunStatus.EXITED, text
        assert "[rank=0] rank 0 got SIGTERM" in text and "[rank=1] rank 1 got SIGTERM" in text
        again.release(found)
    finally:
        again.close()


def test_a_failing_node_ends_the_gang_with_its_exit_code(spread, tmp_path):
    code = TRAPS_SIGTERM.replace(
        "time.sleep(600)", "time.sleep(600 if os.environ['RANK'] == '0' else 1)\nsys.exit(7)"
    )
    spec = spec_for(tmp_path, code, spread.capacity()[:2], argv=LAUNCHER)
    handle = spread.launch(spec)
    state = wait_exit(spread, handle)
    text = output(spread, handle)
    assert (state.status, state.exit_code) == (RunStatus.EXITED, 7), text
    assert "[launcher] rank 1 exited with code 7; stopping the gang" in text
    assert "[rank=0] rank 0 got SIGTERM" in text  # the backend stopped the other node
    spread.release(handle)


def test_a_spread_trial_without_a_launcher_is_refused(spread, tmp_path):
    spec = spec_for(tmp_path, "print('once per node?')", spread.capacity()[:2])
    with pytest.raises(NotSupportedYet, match="only a launcher runs on several nodes"):
        spread.launch(spec)


@pytest.mark.parametrize(
    ("count", "strategy", "nodes", "bundles"),
    [
        (1, "SPREAD", [4, 2], 1),
        (2, "STRICT_PACK", [4, 2], 1),
        (2, "PACK", [4, 2], 1),
        (6, "PACK", [4, 2], 3),  # no node holds 6: the fewest equal bundles a node holds
        (4, "PACK", [2, 2], 2),
        (2, "SPREAD", [4, 2], 2),
        (2, "STRICT_SPREAD", [4, 2], 2),
    ],
)
def test_bundles_of_a_placement(count, strategy, nodes, bundles):
    assert bundle_count(count, strategy, nodes) == bundles


@pytest.mark.parametrize(
    ("count", "strategy", "message"),
    [
        (6, "STRICT_PACK", "does not fit on one node"),
        (3, "STRICT_SPREAD", "the cluster has 2 nodes"),
        (7, "PACK", "more than the cluster has (6)"),
    ],
)
def test_placements_that_cannot_work_are_refused(count, strategy, message):
    with pytest.raises(DoesNotFit, match=re.escape(message)):
        bundle_count(count, strategy, [4, 2])


DOC = Path(__file__).resolve().parents[2] / "docs" / "backends" / "ray.md"
DDP = Path(__file__).resolve().parents[2] / "docs" / "distributed.md"


@pytest.mark.torch
def test_the_docs_spread_pool_runs_the_docs_ddp_example_on_two_nodes(ray_cluster, tmp_path):
    from shipyard.backends.registry import make_backend
    from shipyard.common.config import load_config
    from shipyard.server.pools import load_master_config

    master_yaml = tmp_path / "master.yaml"
    master_yaml.write_text(
        block_with(DOC, "pool_name: ray-spread").replace("10.0.0.5:6379", ray_cluster.address)
    )
    (pool,) = load_master_config(master_yaml).resource_pools
    experiment = load_config(block_with(DOC, "name: ddp-on-two-nodes"), "ray.md")
    train = block_with(DDP, "dist.all_reduce(total)", info="python")
    backend = make_backend(pool, pool=pool.pool_name)
    try:
        slots = backend.capacity()[: experiment.resources.slots_per_trial]
        argv = [sys.executable if a == "python3" else a for a in shlex.split(experiment.entrypoint)]
        spec = spec_for(tmp_path, train, slots, argv=argv)
        (tmp_path / "context" / "train.py").write_text(train)  # main.py's name in the example
        handle = backend.launch(spec)
        state = wait_exit(backend, handle, timeout=90)
        text = output(backend, handle)
        assert (state.status, state.exit_code) == (RunStatus.EXITED, 0), text
        assert "[rank=0] rank 0 of 2: sum 3" in text and "[rank=1] rank 1 of 2: sum 3" in text
        assert len(set(handle.data[Handle.ENVIRONMENT]["node_ids"])) == 2
        backend.release(handle)
    finally:
        backend.close()
