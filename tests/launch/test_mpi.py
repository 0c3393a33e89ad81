"""The MPI launcher run for real: `python -m shipyard.launch.mpi` starting one real `mpirun`
(Open MPI) whose ranks run real mpi4py collectives, relayed by rank and stopped as one unit.
Without mpirun or mpi4py these tests fail, telling to run `make setup`."""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from shipyard.launch import mpi
from tests.fixtures import procs
from tests.launch.launcher import by_rank, env_of, rank_env, run_launcher, script

pytestmark = pytest.mark.mpi

MODULE = "shipyard.launch.mpi"
LAUNCHER = [sys.executable, "-m", MODULE]


def run(args: list[str], env: dict[str, str], timeout: float = 60, cwd: Path | None = None):
    return run_launcher(MODULE, args, env, timeout, cwd)


ENV_NAMES = (
    "SHIPYARD_RANK SHIPYARD_SIZE SHIPYARD_LOCAL_RANK SHIPYARD_LOCAL_SIZE RANK WORLD_SIZE "
    "LOCAL_RANK LOCAL_WORLD_SIZE SHIPYARD_SLOT_IDS CUDA_VISIBLE_DEVICES SHIPYARD_DIST_ADDR "
    "SHIPYARD_DIST_BACKEND OMPI_COMM_WORLD_RANK"
).split()

PRINT_ENV = f"""
import os, sys
for name in {ENV_NAMES!r}:
    print(f"{{name}}={{os.environ.get(name, '<unset>')}}")
print(f"pgid={{os.getpgid(0)}}")
print("to stderr", file=sys.stderr)
sys.stdout.write("no newline at the end")
"""

EXCHANGE = """
from mpi4py import MPI

comm = MPI.COMM_WORLD
total = comm.allreduce(comm.rank + 1)
token = comm.bcast("token-from-0" if comm.rank == 0 else None, root=0)
print(f"sum={total} token={token} rank={comm.rank} size={comm.size}", flush=True)
print("x" * 20000 + f" long line of rank {comm.rank}", flush=True)
"""

ONE_FAILS = """
import os, sys, time
if os.environ["SHIPYARD_RANK"] == "1":
    time.sleep(0.5)
    print("rank 1 gives up", flush=True)
    sys.exit(3)
print("rank 0 sleeps", flush=True)
time.sleep(600)
"""

SLEEPS = """
import os, signal, sys, time
if os.environ["SHIPYARD_RANK"] == "1":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # killed after the grace
print(f"pid={os.getpid()}", flush=True)
time.sleep(600)
"""

ALLGATHER = """
import json
import shipyard.core

with shipyard.core.init() as ctx:
    d = ctx.distributed
    got = d.allgather({"rank": d.rank, "square": d.rank ** 2})
    chief = d.broadcast(f"chief is rank {d.rank}")
    print("RESULT " + json.dumps({"rank": d.rank, "size": d.size, "allgather": got, "b": chief}))
"""


@pytest.fixture(autouse=True)
def _open_mpi_installed() -> None:
    if shutil.which("mpirun") is None:
        pytest.fail(
            "mpirun (Open MPI) is not installed: run `make setup` (it installs Debian's "
            "openmpi-bin and libopenmpi-dev, and the mpi extra's mpi4py)",
            pytrace=False,
        )


def needs_mpi4py() -> None:
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        pytest.fail("mpi4py is not installed: run `make setup` (the mpi extra)", pytrace=False)


def test_two_ranks_exchange_values_over_mpi(tmp_path):
    needs_mpi4py()
    result = run(["--nproc", "2", "python3", script(tmp_path, "x.py", EXCHANGE)], env_of())
    assert result.returncode == 0, result.stdout + result.stderr
    lines = by_rank(result.stdout)
    for rank in (0, 1):
        assert f"sum=3 token=token-from-0 rank={rank} size=2" in lines[rank]
        # a line longer than a pipe's buffer arrives whole, under its own rank
        assert "x" * 20000 + f" long line of rank {rank}" in lines[rank]
    assert "[launcher] all 2 rank(s) exited with code 0" in result.stdout
    command = re.search(r"^\[launcher\] mpirun: (mpirun .*)$", result.stdout, re.M)
    assert command is not None, result.stdout
    assert " -np 2 " in command.group(1) and " --bind-to none " in command.group(1)
    assert "--oversubscribe" not in command.group(1)


@pytest.mark.parametrize(
    ("args", "extra"),
    [(["--nproc", "2"], {}), ([], {"SHIPYARD_SLOT_IDS": "cpu0,cpu1"})],
    ids=["nproc", "slot-ids"],
)
def test_every_rank_gets_its_env_and_its_output_is_prefixed(tmp_path, args, extra):
    result = run([*args, "python3", script(tmp_path, "env.py", PRINT_ENV)], env_of(**extra))
    assert result.returncode == 0, result.stdout + result.stderr
    lines = by_rank(result.stdout)
    assert sorted(lines) == [0, 1]
    envs = {rank: rank_env(lines[rank]) for rank in lines}
    for rank, env in envs.items():
        assert env["OMPI_COMM_WORLD_RANK"] == str(rank)  # really started by mpirun
        assert env["SHIPYARD_RANK"] == env["RANK"] == env["LOCAL_RANK"] == str(rank)
        assert env["SHIPYARD_LOCAL_RANK"] == str(rank)
        assert env["SHIPYARD_SIZE"] == env["WORLD_SIZE"] == env["LOCAL_WORLD_SIZE"] == "2"
        assert env["SHIPYARD_LOCAL_SIZE"] == "2"
        assert env["SHIPYARD_SLOT_IDS"] == f"cpu{rank}"
        assert env["CUDA_VISIBLE_DEVICES"] == "<unset>"
        assert env["SHIPYARD_DIST_BACKEND"] == "gloo"
        assert re.fullmatch(r"127\.0\.0\.1:\d+", env["SHIPYARD_DIST_ADDR"])
        assert "to stderr" in lines[rank] and "no newline at the end" in lines[rank]
    assert envs[0]["SHIPYARD_DIST_ADDR"] == envs[1]["SHIPYARD_DIST_ADDR"]
    assert "[launcher] all 2 rank(s) exited with code 0" in result.stdout


def test_gpu_slots_pin_one_device_per_rank(tmp_path):
    env = env_of(SHIPYARD_SLOT_IDS="gpu1,gpu3", CUDA_VISIBLE_DEVICES="1,3")
    result = run(["python3", script(tmp_path, "env.py", PRINT_ENV)], env)
    assert result.returncode == 0, result.stdout + result.stderr
    envs = {rank: rank_env(lines) for rank, lines in by_rank(result.stdout).items()}
    assert [envs[r]["CUDA_VISIBLE_DEVICES"] for r in (0, 1)] == ["1", "3"]
    assert [envs[r]["SHIPYARD_SLOT_IDS"] for r in (0, 1)] == ["gpu1", "gpu3"]
    assert {envs[r]["SHIPYARD_DIST_BACKEND"] for r in (0, 1)} == {"nccl"}


def test_a_failing_rank_stops_the_gang_and_is_named(tmp_path):
    env = env_of(SHIPYARD_SLOT_IDS="cpu0,cpu1")
    start = time.monotonic()
    result = run(["python3", script(tmp_path, "fail.py", ONE_FAILS)], env, timeout=60)
    took = time.monotonic() - start
    assert result.returncode == 3, result.stdout + result.stderr
    assert "[rank=1] rank 1 gives up" in result.stdout
    assert "[launcher] rank 1 exited with code 3; mpirun stopped the gang" in result.stdout
    assert took < 15  # rank 0 (sleeping 600 s) was stopped by mpirun


def test_a_signal_to_the_launcher_stops_every_rank(tmp_path):
    proc = subprocess.Popen(
        [*LAUNCHER, "python3", script(tmp_path, "sleep.py", SLEEPS)],
        env=env_of(SHIPYARD_SLOT_IDS="cpu0,cpu1", SHIPYARD_GANG_GRACE_S="1"),
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,  # the launcher leads its own group, as under the master
    )
    assert proc.stdout is not None
    pids = []
    while len(pids) < 2:
        line = proc.stdout.readline()
        assert line, "the launcher ended before both ranks started"
        if "pid=" in line:
            pids.append(int(line.rsplit("=", 1)[1]))
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 143
    rest = proc.stdout.read()
    assert "[launcher] the launcher got SIGTERM: sending SIGTERM to rank(s) 0, 1" in rest
    assert "[launcher] rank 1 still running after 1 s: SIGKILL" in rest
    for pid in pids:  # gone, or a zombie left to init (mpirun does not reap what it SIGKILLs)
        assert not procs.alive(pid)
    assert subprocess.run(["pgrep", "-f", str(tmp_path)], capture_output=True).stdout == b""


def test_ctx_distributed_allgather_under_mpi(tmp_path):
    result = run(
        ["--nproc", "2", "python3", script(tmp_path, "train.py", ALLGATHER)],
        env_of(),
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = by_rank(result.stdout)
    for rank in (0, 1):
        (line,) = [x for x in lines[rank] if x.startswith("RESULT ")]
        got = json.loads(line.removeprefix("RESULT "))
        assert got == {
            "rank": rank,
            "size": 2,
            "allgather": [{"rank": 0, "square": 0}, {"rank": 1, "square": 1}],
            "b": "chief is rank 0",
        }


def test_a_command_that_does_not_exist(tmp_path):
    result = run(["--nproc", "2", "no-such-program-here"], env_of())
    assert result.returncode == 127, result.stdout + result.stderr
    assert "cannot start rank" in result.stdout and "no-such-program-here" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("args", "extra", "message"),
    [
        ([], {"SHIPYARD_SLOT_IDS": "cpu0"}, "no command given"),
        (["python3", "x.py"], {}, "SHIPYARD_SLOT_IDS is not set"),
        (["--nproc", "3", "python3"], {"SHIPYARD_SLOT_IDS": "cpu0,cpu1"}, "does not match"),
        (["--bogus", "python3"], {}, "unknown option '--bogus'"),
    ],
)
def test_bad_input_is_one_line_and_exit_code_2(args, extra, message):
    result = run(args, env_of(**extra))
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert message in result.stderr
    assert result.stderr.startswith("shipyard.launch.mpi: ")


def test_without_mpirun_the_launcher_says_what_to_install(tmp_path):
    result = run(["--nproc", "2", "python3", "x.py"], {**env_of(), "PATH": str(tmp_path)})
    assert result.returncode == 127
    assert "mpirun not found" in result.stderr and "openmpi-bin" in result.stderr


def test_the_hostfile_and_the_mpirun_command():
    hosts = [("127.0.0.1", 2), ("node2", 4)]
    assert mpi.hostfile(hosts) == "127.0.0.1 slots=2\nnode2 slots=4\n"
    env = {"PATH": "/bin", "SHIPYARD_DIST_ADDR": "h:1", "SECRET": "s", "HOME": "/root"}
    args = mpi.mpirun_command("/usr/bin/mpirun", "/tmp/hf", hosts, 6, env, ["python3", "t.py"])
    assert args[:5] == ["/usr/bin/mpirun", "--hostfile", "/tmp/hf", "-np", "6"]
    assert "--oversubscribe" not in args  # 6 ranks on 6 slots
    assert ["-x", "PATH"] == args[args.index("PATH") - 1 : args.index("PATH") + 1]
    assert "SECRET" not in args and "h:1" not in args  # names only, never values
    assert args[-5:] == ["-m", "shipyard.launch._mpi_rank", "--", "python3", "t.py"]
    more = mpi.mpirun_command("/usr/bin/mpirun", "/tmp/hf", [("127.0.0.1", 1)], 2, {}, ["x"])
    assert "--oversubscribe" in more


DOC = Path(__file__).resolve().parents[2] / "docs" / "distributed.md"


def test_the_docs_example_runs(tmp_path):
    from shipyard.common.config import load_config, validate_context

    needs_mpi4py()
    text = DOC.read_text()
    (yaml_block,) = re.findall(r"```yaml mpi\n(.*?)```", text, flags=re.S)
    (python_block,) = re.findall(r"```python mpi_train.py\n(.*?)```", text, flags=re.S)
    config = load_config(yaml_block, "distributed.md")
    validate_context(config, {"mpi_train.py"})  # accepted at submit, its script checked
    train = script(tmp_path, "mpi_train.py", python_block)
    result = run(["--nproc", "2", "python3", train], env_of())
    assert result.returncode == 0, result.stdout + result.stderr
    assert by_rank(result.stdout) == {0: ["rank 0 of 2: sum 3"], 1: ["rank 1 of 2: sum 3"]}
