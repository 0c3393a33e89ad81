"""Multi-node launchers run for real: two launcher processes on this machine, each playing
one node (SHIPYARD_NUM_NODES=2, SHIPYARD_NODE_RANK, one SHIPYARD_RENDEZVOUS_ADDR), as a
backend starts them on two machines."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from shipyard.common.ports import free_ports
from tests.launch.launcher import by_rank, env_of, rank_env, run_launcher, script

TORCH = "shipyard.launch.torch_distributed"
TF = "shipyard.launch.tensorflow"
MPI = "shipyard.launch.mpi"

ENV_NAMES = (
    "RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT GROUP_RANK "
    "GROUP_WORLD_SIZE NODE_RANK ROLE_RANK ROLE_WORLD_SIZE SHIPYARD_RANK SHIPYARD_SIZE "
    "SHIPYARD_LOCAL_RANK SHIPYARD_LOCAL_SIZE SHIPYARD_SLOT_IDS SHIPYARD_DIST_ADDR TF_CONFIG"
).split()

PRINT_ENV = f"""
import os
for name in {ENV_NAMES!r}:
    print(f"{{name}}={{os.environ.get(name, '<unset>')}}", flush=True)
"""

# torch's all_reduce across the nodes, then ctx.distributed's allgather (the coordinator on
# node 0): both must see every global rank.
ALL_REDUCE = """
import os
import torch
import torch.distributed as dist
from shipyard.core.distributed import make_distributed

dist.init_process_group(os.environ["SHIPYARD_DIST_BACKEND"])  # env://
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
print(f"sum={t.item():g} rank={dist.get_rank()} size={dist.get_world_size()}", flush=True)
dist.barrier()
dist.destroy_process_group()
ctx = make_distributed()
print(f"allgather={ctx.allgather(ctx.rank)} chief={ctx.is_chief}", flush=True)
ctx.close()
"""


def start_nodes(
    module: str, args: list[str], slots: list[str], extra: dict[str, str] | None = None
) -> list[subprocess.Popen]:
    """One launcher per node, node i with SHIPYARD_SLOT_IDS = slots[i]; all at once, each
    leading a process group of its own as under a backend."""
    addr = f"127.0.0.1:{free_ports(2, '127.0.0.1', consecutive=True)[0]}"
    procs = []
    for rank, ids in enumerate(slots):
        env = env_of(
            SHIPYARD_NUM_NODES=str(len(slots)),
            SHIPYARD_NODE_RANK=str(rank),
            SHIPYARD_RENDEZVOUS_ADDR=addr,
            SHIPYARD_SLOT_IDS=ids,
            SHIPYARD_RENDEZVOUS_TIMEOUT_S="60",
            **(extra or {}),
        )
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", module, *args],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,
            )
        )
    return procs


def finish_nodes(
    procs: list[subprocess.Popen], timeout: float = 120
) -> list[subprocess.CompletedProcess]:
    results = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=timeout)
            results.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return results


def run_nodes(
    module: str, args: list[str], slots: list[str], timeout: float = 120
) -> list[subprocess.CompletedProcess]:
    return finish_nodes(start_nodes(module, args, slots), timeout)


def text_of(results: list[subprocess.CompletedProcess]) -> str:
    return "\n".join(f"--- node {i}\n{r.stdout}{r.stderr}" for i, r in enumerate(results))


def test_torch_ranks_are_global_across_two_nodes(tmp_path: Path):
    results = run_nodes(
        TORCH, ["python3", script(tmp_path, "env.py", PRINT_ENV)], ["cpu0,cpu1"] * 2
    )
    assert [r.returncode for r in results] == [0, 0], text_of(results)
    envs = {}
    for node, result in enumerate(results):
        lines = by_rank(result.stdout)
        assert sorted(lines) == [2 * node, 2 * node + 1]  # [rank=R] is the global rank
        for rank, rank_lines in lines.items():
            env = rank_env(rank_lines)
            local = rank - 2 * node
            assert env["RANK"] == env["SHIPYARD_RANK"] == env["ROLE_RANK"] == str(rank)
            assert env["LOCAL_RANK"] == env["SHIPYARD_LOCAL_RANK"] == str(local)
            assert env["WORLD_SIZE"] == env["SHIPYARD_SIZE"] == env["ROLE_WORLD_SIZE"] == "4"
            assert env["LOCAL_WORLD_SIZE"] == env["SHIPYARD_LOCAL_SIZE"] == "2"
            assert env["GROUP_RANK"] == env["NODE_RANK"] == str(node)
            assert env["GROUP_WORLD_SIZE"] == "2"
            assert env["SHIPYARD_SLOT_IDS"] == f"cpu{local}"
            envs[rank] = env
        assert f"(node {node} of 2: ranks {2 * node}-{2 * node + 1} of 4)" in result.stdout
    # one rendezvous: torch's MASTER_PORT is its port, the coordinator its port + 1
    assert (
        len({(e["MASTER_ADDR"], e["MASTER_PORT"], e["SHIPYARD_DIST_ADDR"]) for e in envs.values()})
        == 1
    )
    master_port = int(envs[0]["MASTER_PORT"])
    assert envs[0]["MASTER_ADDR"] == "127.0.0.1"
    assert envs[0]["SHIPYARD_DIST_ADDR"] == f"127.0.0.1:{master_port + 1}"


@pytest.mark.torch
def test_a_gloo_all_reduce_and_ctx_distributed_span_two_nodes(tmp_path: Path):
    train = script(tmp_path, "ar.py", ALL_REDUCE)
    results = run_nodes(TORCH, ["python3", train], ["cpu0,cpu1"] * 2)
    assert [r.returncode for r in results] == [0, 0], text_of(results)
    lines = {**by_rank(results[0].stdout), **by_rank(results[1].stdout)}
    assert sorted(lines) == [0, 1, 2, 3]
    for rank in range(4):
        assert f"sum=10 rank={rank} size=4" in lines[rank], text_of(results)
        assert f"allgather=[0, 1, 2, 3] chief={rank == 0}" in lines[rank]


def test_tf_config_lists_every_worker_of_every_node(tmp_path: Path):
    results = run_nodes(TF, ["python3", script(tmp_path, "env.py", PRINT_ENV)], ["cpu0,cpu1"] * 2)
    assert [r.returncode for r in results] == [0, 0], text_of(results)
    configs = {}
    for node, result in enumerate(results):
        for rank, lines in by_rank(result.stdout).items():
            env = rank_env(lines)
            configs[rank] = json.loads(env["TF_CONFIG"])
            assert env["SHIPYARD_RANK"] == str(rank) and env["SHIPYARD_SIZE"] == "4"
            assert env["SHIPYARD_LOCAL_RANK"] == str(rank - 2 * node)
            assert env["SHIPYARD_LOCAL_SIZE"] == "2"
    assert sorted(configs) == [0, 1, 2, 3]
    cluster = configs[0]["cluster"]
    assert list(cluster) == ["worker"] and len(cluster["worker"]) == 4
    assert len(set(cluster["worker"])) == 4  # one address per worker
    for rank, config in configs.items():
        assert config == {"cluster": cluster, "task": {"type": "worker", "index": rank}}


@pytest.mark.parametrize("module", [TORCH, MPI])
def test_uneven_slots_are_refused_on_every_node(tmp_path: Path, module: str):
    results = run_nodes(
        module, ["python3", script(tmp_path, "env.py", PRINT_ENV)], ["cpu0,cpu1", "cpu0"]
    )
    assert [r.returncode for r in results] == [2, 2], text_of(results)
    for result in results:
        assert "[rank=" not in result.stdout  # no rank started anywhere
        (line,) = result.stderr.splitlines()
        assert line.startswith(f"{module}: every node of a multi-node trial must have the same")
        assert "node 0 has 2, node 1 has 1" in line


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"SHIPYARD_NUM_NODES": "two"}, "SHIPYARD_NUM_NODES must be a number"),
        ({"SHIPYARD_NUM_NODES": "2", "SHIPYARD_NODE_RANK": "2"}, "SHIPYARD_NODE_RANK must be"),
        (
            {"SHIPYARD_NUM_NODES": "2", "SHIPYARD_NODE_RANK": "0"},
            "SHIPYARD_RENDEZVOUS_ADDR must be host:port",
        ),
    ],
)
def test_bad_multi_node_variables_are_one_line_and_exit_code_2(tmp_path, extra, message):
    env = env_of(SHIPYARD_SLOT_IDS="cpu0", **extra)
    for module in (TORCH, TF, MPI):
        result = run_launcher(module, ["python3", "x.py"], env)
        assert result.returncode == 2, result.stdout + result.stderr
        assert len(result.stderr.splitlines()) == 1 and message in result.stderr


def test_tf_ps_runs_the_chief_and_ps_on_node_0_and_workers_on_every_node(tmp_path: Path):
    from tests.launch.test_tensorflow import TASK

    task = script(tmp_path, "task.py", TASK)
    results = run_nodes(TF, ["--ps", "1", "python3", task], ["cpu0,cpu1"] * 2, timeout=60)
    assert [r.returncode for r in results] == [0, 0], text_of(results)
    configs = {}
    for node, result in enumerate(results):
        for rank, lines in by_rank(result.stdout).items():
            configs[rank] = (node, json.loads(rank_env(lines)["TF_CONFIG"]))
    # node 0: chief (0), workers 0-1 (1-2), ps 0 (5); node 1: workers 2-3 (3-4)
    tasks = {
        rank: (node, c["task"]["type"], c["task"]["index"]) for rank, (node, c) in configs.items()
    }
    assert tasks == {
        0: (0, "chief", 0),
        1: (0, "worker", 0),
        2: (0, "worker", 1),
        3: (1, "worker", 2),
        4: (1, "worker", 3),
        5: (0, "ps", 0),
    }, text_of(results)
    cluster = configs[0][1]["cluster"]
    assert {name: len(addrs) for name, addrs in cluster.items()} == {
        "chief": 1,
        "worker": 4,
        "ps": 1,
    }
    assert all(c["cluster"] == cluster for _, c in configs.values())
    assert "[rank=0] chief reached every server" in results[0].stdout  # node 1's workers too
    # the chief's exit 0 ended node 0's gang, and node 0 ending ended node 1's workers
    assert "rank 0 exited with code 0, which ends the gang" in results[0].stdout
    assert "node 0's launcher (the chief's) ended, which ends the gang" in results[1].stdout


def test_one_node_failing_exits_with_its_rank_s_code_and_global_rank(tmp_path: Path):
    code = "import os, sys\nsys.exit(5 if os.environ['RANK'] == '3' else 0)\n"
    results = run_nodes(TORCH, ["python3", script(tmp_path, "fail.py", code)], ["cpu0,cpu1"] * 2)
    assert [r.returncode for r in results] == [0, 5], text_of(results)
    assert "[launcher] rank 3 exited with code 5; stopping the gang" in results[1].stdout


DOC = Path(__file__).resolve().parents[2] / "docs" / "distributed.md"


@pytest.mark.torch
def test_the_docs_two_node_commands_run(tmp_path: Path):
    """docs/distributed.md's two launchers (on a free rendezvous port) with its train.py."""
    text = DOC.read_text()
    (commands,) = re.findall(r"```sh\n(SHIPYARD_NUM_NODES=2 .*?)```", text, flags=re.S)
    (train,) = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    script(tmp_path, "train.py", train)
    port = free_ports(2, "127.0.0.1", consecutive=True)[0]
    procs = []
    for command in commands.replace("\\\n", " ").replace("&", "").strip().splitlines():
        words = shlex.split(command.replace("127.0.0.1:29500", f"127.0.0.1:{port}"))
        assigned = dict(w.split("=", 1) for w in words if re.match(r"^[A-Z_]+=", w))
        argv = [w for w in words if not re.match(r"^[A-Z_]+=", w)]
        procs.append(
            subprocess.Popen(
                argv, env=env_of(**assigned), cwd=tmp_path, stdout=subprocess.PIPE, text=True
            )
        )
    outs = [proc.communicate(timeout=120)[0] for proc in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert by_rank(outs[0]) == {0: ["rank 0 of 2: sum 3"]}
    assert by_rank(outs[1]) == {1: ["rank 1 of 2: sum 3"]}
