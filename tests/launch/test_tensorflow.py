"""The TensorFlow launcher run for real: `python -m shipyard.launch.tensorflow` starting one
process per slot (and, with --ps, a chief and parameter servers), each with its TF_CONFIG in
the form TensorFlow documents. TensorFlow itself is needed only by the last tests."""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import pytest

from tests.fixtures.require import module
from tests.launch.launcher import by_rank, env_of, run_launcher, script

MODULE = "shipyard.launch.tensorflow"
LAUNCHER = [sys.executable, "-m", MODULE]


def run(args: list[str], env: dict[str, str], timeout: float = 60, cwd: Path | None = None):
    return run_launcher(MODULE, args, env, timeout, cwd)


PROG = "shipyard.launch.tensorflow: "
ENV_NAMES = (
    "SHIPYARD_RANK SHIPYARD_SIZE SHIPYARD_LOCAL_RANK SHIPYARD_LOCAL_SIZE SHIPYARD_SLOT_IDS "
    "SHIPYARD_DIST_ADDR SHIPYARD_MASTER CUDA_VISIBLE_DEVICES GRPC_FAIL_FAST"
).split()

# Prints its TF_CONFIG and env; then behaves as TensorFlow's tasks do: with a "chief" in the
# cluster, workers and ps listen on their address until stopped (server.join()) and the chief
# connects to every one of them before it exits.
TASK = f"""
import json, os, socket, time
config = os.environ["TF_CONFIG"]
print("TF_CONFIG=" + config)
for name in {ENV_NAMES!r}:
    print(f"{{name}}={{os.environ.get(name, '<unset>')}}")
tf_config = json.loads(config)
task, cluster = tf_config["task"], tf_config["cluster"]
host, port = cluster[task["type"]][task["index"]].rsplit(":", 1)
if "chief" not in cluster:
    pass  # MultiWorkerMirroredStrategy: every worker trains and exits
elif task["type"] == "chief":
    for address in cluster["worker"] + cluster["ps"]:
        peer_host, peer_port = address.rsplit(":", 1)
        for _ in range(200):
            try:
                socket.create_connection((peer_host, int(peer_port)), timeout=5).close()
                break
            except OSError:
                time.sleep(0.05)
        else:
            raise SystemExit(f"cannot reach {{address}}")
    print("chief reached every server", flush=True)
else:
    server = socket.create_server((host, int(port)))  # the port is free and ours
    print("serving", flush=True)
    while True:
        server.accept()[0].close()
"""


def envs_of(stdout: str) -> dict[int, dict[str, str]]:
    return {
        rank: dict(line.split("=", 1) for line in lines if "=" in line)
        for rank, lines in by_rank(stdout).items()
    }


def check_documented_shape(config: dict, task_types: tuple[str, ...]) -> None:
    """TensorFlow's documented TF_CONFIG: {"cluster": {TYPE: ["host:port", ...]},
    "task": {"type": TYPE, "index": INT}} and nothing else."""
    assert set(config) == {"cluster", "task"}
    assert set(config["cluster"]) == set(task_types)
    for addresses in config["cluster"].values():
        assert isinstance(addresses, list) and addresses
        assert all(isinstance(a, str) and re.fullmatch(r"127\.0\.0\.1:\d+", a) for a in addresses)
    assert set(config["task"]) == {"type", "index"}
    assert config["task"]["type"] in task_types
    assert type(config["task"]["index"]) is int


def check_cluster(envs: dict[int, dict[str, str]], shape: dict[str, int]) -> list[dict]:
    configs = [json.loads(envs[r]["TF_CONFIG"]) for r in sorted(envs)]  # valid JSON
    for config in configs:
        check_documented_shape(config, tuple(shape))
    cluster = configs[0]["cluster"]
    assert all(c["cluster"] == cluster for c in configs)  # the same in every process
    assert {k: len(v) for k, v in cluster.items()} == shape
    tasks = sorted((c["task"]["type"], c["task"]["index"]) for c in configs)
    assert tasks == sorted((t, i) for t, n in shape.items() for i in range(n))  # once each
    addresses = [a for v in cluster.values() for a in v]
    assert len({a.rsplit(":", 1)[1] for a in addresses}) == len(addresses)  # distinct ports
    return configs


@pytest.mark.parametrize(
    ("args", "extra"),
    [(["--nproc", "2"], {}), ([], {"SHIPYARD_SLOT_IDS": "cpu0,cpu1"})],
    ids=["nproc", "slot-ids"],
)
def test_two_workers_get_the_documented_multi_worker_tf_config(tmp_path, args, extra):
    result = run([*args, "python3", script(tmp_path, "task.py", TASK)], env_of(**extra))
    assert result.returncode == 0, result.stdout + result.stderr
    envs = envs_of(result.stdout)
    assert sorted(envs) == [0, 1]
    configs = check_cluster(envs, {"worker": 2})
    for rank, config in enumerate(configs):
        # TensorFlow's example: {"cluster": {"worker": [2 addresses]},
        #                        "task": {"type": "worker", "index": 0}}; worker 0 is the chief
        assert config["task"] == {"type": "worker", "index": rank}
        env = envs[rank]
        assert env["SHIPYARD_RANK"] == env["SHIPYARD_LOCAL_RANK"] == str(rank)
        assert env["SHIPYARD_SIZE"] == env["SHIPYARD_LOCAL_SIZE"] == "2"
        assert env["SHIPYARD_SLOT_IDS"] == f"cpu{rank}"
        assert env["CUDA_VISIBLE_DEVICES"] == ""  # CPU slots: TensorFlow must take no GPU
        assert env["GRPC_FAIL_FAST"] == "<unset>"
    assert envs[0]["SHIPYARD_DIST_ADDR"] == envs[1]["SHIPYARD_DIST_ADDR"] != "<unset>"
    assert "[launcher] all workers exited with code 0" in result.stdout


def test_with_ps_a_chief_the_workers_and_the_ps_get_the_documented_tf_config(tmp_path):
    env = env_of(SHIPYARD_SLOT_IDS="gpu1,gpu3", CUDA_VISIBLE_DEVICES="1,3")
    env["SHIPYARD_MASTER"] = "http://127.0.0.1:9"  # kept by the chief only (never called here)
    start = time.monotonic()
    result = run(["--ps", "1", "python3", script(tmp_path, "task.py", TASK)], env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert time.monotonic() - start < 20  # the servers were stopped, not waited for
    envs = envs_of(result.stdout)
    assert sorted(envs) == [0, 1, 2, 3]  # chief, worker 0, worker 1, ps 0
    configs = check_cluster(envs, {"chief": 1, "worker": 2, "ps": 1})
    tasks = [c["task"] for c in configs]
    assert tasks == [
        {"type": "chief", "index": 0},
        {"type": "worker", "index": 0},
        {"type": "worker", "index": 1},
        {"type": "ps", "index": 0},
    ]
    chief, worker0, worker1, ps0 = (envs[r] for r in range(4))
    # the chief is ctx.distributed's only rank and the one process that talks to the master
    assert [chief[n] for n in ENV_NAMES[:4]] == ["0", "1", "0", "1"]
    assert chief["SHIPYARD_MASTER"] == "http://127.0.0.1:9"
    for other in (worker0, worker1, ps0):
        assert {other[n] for n in [*ENV_NAMES[:4], "SHIPYARD_DIST_ADDR", "SHIPYARD_MASTER"]} == {
            "<unset>"
        }
    assert chief["SHIPYARD_DIST_ADDR"] == "<unset>"
    # workers on their GPU slot; the chief and the ps on CPU
    assert [worker0["SHIPYARD_SLOT_IDS"], worker1["SHIPYARD_SLOT_IDS"]] == ["gpu1", "gpu3"]
    assert [worker0["CUDA_VISIBLE_DEVICES"], worker1["CUDA_VISIBLE_DEVICES"]] == ["1", "3"]
    assert chief["CUDA_VISIBLE_DEVICES"] == ps0["CUDA_VISIBLE_DEVICES"] == ""
    assert chief["SHIPYARD_SLOT_IDS"] == ps0["SHIPYARD_SLOT_IDS"] == "<unset>"
    assert {e["GRPC_FAIL_FAST"] for e in envs.values()} == {"use_caller"}
    assert "chief reached every server" in by_rank(result.stdout)[0]
    assert (
        "[launcher] rank=0: chief 0 (rank 0 of 1, reports to the master), "
        "rank=1: worker 0 on gpu1, rank=2: worker 1 on gpu3, rank=3: ps 0"
    ) in result.stdout
    assert (
        "[launcher] rank 0 exited with code 0, which ends the gang: sending SIGTERM to "
        "rank(s) 1, 2, 3"
    ) in result.stdout
    assert "[launcher] the chief exited with code 0" in result.stdout


def test_a_failing_process_stops_the_gang(tmp_path):
    code = (
        "import json, os, sys, time\n"
        "task = json.loads(os.environ['TF_CONFIG'])['task']\n"
        "if task['type'] == 'ps':\n"
        "    print('ps gives up', flush=True); time.sleep(0.3); sys.exit(3)\n"
        "time.sleep(600)\n"
    )
    env = env_of(SHIPYARD_GANG_GRACE_S="5")
    start = time.monotonic()
    result = run(["--nproc", "2", "--ps", "1", "python3", script(tmp_path, "f.py", code)], env)
    assert result.returncode == 3, result.stdout + result.stderr
    assert "[rank=3] ps gives up" in result.stdout
    assert "[launcher] rank 3 exited with code 3; stopping the gang" in result.stdout
    assert "sending SIGTERM to rank(s) 0, 1, 2" in result.stdout
    assert time.monotonic() - start < 5


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--ps", "-1", "python3", "x.py"], "--ps takes a number of parameter servers"),
        (["--ps", "two", "python3", "x.py"], "got 'two'"),
        (["--ps=1.5", "python3", "x.py"], "got '1.5'"),
        (["--nproc", "2", "--ps"], "--ps needs a number"),
        (["--ps", "1", "--nproc", "2"], "no command given"),
        (["--ps", "1", "--bogus", "python3"], "[--ps K] [--nproc N]"),
        (["--ps", "1", "python3", "x.py"], "SHIPYARD_SLOT_IDS is not set"),
    ],
)
def test_bad_input_is_one_line_and_exit_code_2(args, message):
    result = run(args, env_of())
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert message in result.stderr
    assert result.stderr.startswith(PROG)


DOC = Path(__file__).resolve().parents[2] / "docs" / "distributed.md"


def doc_block(info: str) -> str:
    (block,) = re.findall(rf"```{re.escape(info)}\n(.*?)```", DOC.read_text(), flags=re.S)
    return block


def test_the_docs_config_is_accepted():
    from shipyard.common.config import load_config, validate_context

    config = load_config(doc_block("yaml tensorflow"), "distributed.md")
    validate_context(config, {"tf_train.py"})


def test_the_docs_example_runs_two_multi_worker_mirrored_workers(tmp_path):
    module("tensorflow", "tensorflow-cpu (requirements-test.txt; make setup installs it)")
    train = script(tmp_path, "tf_train.py", doc_block("python tf_train.py"))
    result = run(["--nproc", "2", "python3", train], env_of(), timeout=240)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = by_rank(result.stdout)
    assert "worker 0 of 2: sum 3" in lines[0], result.stdout
    assert "worker 1 of 2: sum 3" in lines[1], result.stdout
