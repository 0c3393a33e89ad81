"""The torch launcher run for real: `python -m shipyard.launch.torch_distributed` starting
rank processes, relaying their output by rank, and stopping the gang as one unit."""

from __future__ import annotations

import importlib.util
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fixtures import procs
from tests.launch.launcher import by_rank, env_of, rank_env, run_launcher, script

MODULE = "shipyard.launch.torch_distributed"
LAUNCHER = [sys.executable, "-m", MODULE]


def run(args: list[str], env: dict[str, str], timeout: float = 60, cwd: Path | None = None):
    return run_launcher(MODULE, args, env, timeout, cwd)


ENV_NAMES = (
    "RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT GROUP_RANK "
    "GROUP_WORLD_SIZE ROLE_RANK ROLE_WORLD_SIZE SHIPYARD_RANK "
    "SHIPYARD_SIZE SHIPYARD_LOCAL_RANK SHIPYARD_LOCAL_SIZE SHIPYARD_SLOT_IDS "
    "SHIPYARD_DIST_BACKEND SHIPYARD_DIST_ADDR CUDA_VISIBLE_DEVICES"
).split()

PRINT_ENV = f"""
import os, sys
for name in {ENV_NAMES!r}:
    print(f"{{name}}={{os.environ.get(name, '<unset>')}}")
print("to stderr", file=sys.stderr)
sys.stdout.write("no newline at the end")
"""

ALL_REDUCE = """
import os
import torch
import torch.distributed as dist

dist.init_process_group(os.environ["SHIPYARD_DIST_BACKEND"])  # env://
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
print(f"sum={t.item():g} rank={dist.get_rank()} size={dist.get_world_size()}", flush=True)
dist.destroy_process_group()
"""

ONE_FAILS = """
import os, sys, time
if os.environ["RANK"] == "1":
    time.sleep(0.5)
    print("rank 1 gives up", flush=True)
    sys.exit(3)
print("rank 0 sleeps", flush=True)
time.sleep(600)
"""

SLEEPS = """
import os, time
print(f"pid={os.getpid()}", flush=True)
time.sleep(600)
"""


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
        assert env["RANK"] == env["LOCAL_RANK"] == env["SHIPYARD_RANK"] == str(rank)
        assert env["SHIPYARD_LOCAL_RANK"] == str(rank)
        assert env["WORLD_SIZE"] == env["LOCAL_WORLD_SIZE"] == "2"
        assert env["SHIPYARD_SIZE"] == env["SHIPYARD_LOCAL_SIZE"] == "2"
        # as torchrun sets them on one machine (Lightning and Accelerate read GROUP_RANK)
        assert env["ROLE_RANK"] == str(rank) and env["ROLE_WORLD_SIZE"] == "2"
        assert env["GROUP_RANK"] == "0" and env["GROUP_WORLD_SIZE"] == "1"
        assert env["MASTER_ADDR"] == "127.0.0.1"
        assert env["SHIPYARD_SLOT_IDS"] == f"cpu{rank}"
        assert env["SHIPYARD_DIST_BACKEND"] == "gloo"
        assert env["CUDA_VISIBLE_DEVICES"] == "<unset>"
        # stderr and a partial last line are relayed too, each on its own prefixed line
        assert "to stderr" in lines[rank] and "no newline at the end" in lines[rank]
        assert len(lines[rank]) == len(ENV_NAMES) + 2
    assert envs[0]["MASTER_PORT"] == envs[1]["MASTER_PORT"]
    assert envs[0]["MASTER_PORT"].isdigit()
    # the collectives server for ctx.distributed, when shipyard.launch._coordinator exists
    assert envs[0]["SHIPYARD_DIST_ADDR"] == envs[1]["SHIPYARD_DIST_ADDR"]
    if importlib.util.find_spec("shipyard.launch._coordinator") is not None:
        assert re.fullmatch(r"127\.0\.0\.1:\d+", envs[0]["SHIPYARD_DIST_ADDR"])
    assert "[launcher] all 2 rank(s) exited with code 0" in result.stdout


def test_gpu_slots_pin_one_device_per_rank(tmp_path):
    env = env_of(SHIPYARD_SLOT_IDS="gpu1,gpu3", CUDA_VISIBLE_DEVICES="1,3")
    result = run(["python3", script(tmp_path, "env.py", PRINT_ENV)], env)
    assert result.returncode == 0, result.stdout + result.stderr
    envs = {rank: rank_env(lines) for rank, lines in by_rank(result.stdout).items()}
    assert [envs[r]["CUDA_VISIBLE_DEVICES"] for r in (0, 1)] == ["1", "3"]
    assert [envs[r]["SHIPYARD_SLOT_IDS"] for r in (0, 1)] == ["gpu1", "gpu3"]
    assert {envs[r]["SHIPYARD_DIST_BACKEND"] for r in (0, 1)} == {"nccl"}


def test_one_slot_runs_one_rank(tmp_path):
    result = run(
        ["python3", script(tmp_path, "env.py", PRINT_ENV)], env_of(SHIPYARD_SLOT_IDS="cpu0")
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = by_rank(result.stdout)
    assert list(lines) == [0] and rank_env(lines[0])["WORLD_SIZE"] == "1"


@pytest.mark.torch
def test_gloo_all_reduce_over_two_ranks(tmp_path):
    result = run(["--nproc", "2", "--", "python3", script(tmp_path, "ar.py", ALL_REDUCE)], env_of())
    assert result.returncode == 0, result.stdout + result.stderr
    lines = by_rank(result.stdout)
    assert "sum=3 rank=0 size=2" in lines[0]
    assert "sum=3 rank=1 size=2" in lines[1]


def test_a_failing_rank_stops_the_gang_with_its_exit_code(tmp_path):
    env = env_of(SHIPYARD_SLOT_IDS="cpu0,cpu1", SHIPYARD_GANG_GRACE_S="5")
    start = time.monotonic()
    result = run(["python3", script(tmp_path, "fail.py", ONE_FAILS)], env, timeout=30)
    took = time.monotonic() - start
    assert result.returncode == 3, result.stdout + result.stderr
    assert "[rank=1] rank 1 gives up" in result.stdout
    assert "[launcher] rank 1 exited with code 3; stopping the gang" in result.stdout
    assert "sending SIGTERM to rank(s) 0" in result.stdout
    assert took < 5  # rank 0 died at SIGTERM: no need to wait for the grace


def test_a_rank_ignoring_sigterm_is_killed_after_the_grace(tmp_path):
    code = "import signal, sys, time, os\n"
    code += "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    code += "print('ready', flush=True)\n"
    code += "time.sleep(0.5) if os.environ['RANK'] == '0' else time.sleep(600)\n"
    code += "os.kill(os.getpid(), signal.SIGKILL) if os.environ['RANK'] == '0' else None\n"
    env = env_of(SHIPYARD_SLOT_IDS="cpu0,cpu1", SHIPYARD_GANG_GRACE_S="1")
    start = time.monotonic()
    result = run(["python3", script(tmp_path, "stubborn.py", code)], env, timeout=30)
    assert result.returncode == 128 + signal.SIGKILL, result.stdout + result.stderr
    assert "[launcher] rank 0 was killed by SIGKILL; stopping the gang" in result.stdout
    assert "[launcher] rank 1 still running after 1 s: SIGKILL" in result.stdout
    assert 1 <= time.monotonic() - start < 10


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_the_launcher_stops_every_rank(tmp_path, sig):
    proc = subprocess.Popen(
        [*LAUNCHER, "python3", script(tmp_path, "sleep.py", SLEEPS)],
        env=env_of(SHIPYARD_SLOT_IDS="cpu0,cpu1", SHIPYARD_GANG_GRACE_S="5"),
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    pids = []
    while len(pids) < 2:
        line = proc.stdout.readline()
        assert line, "the launcher ended before both ranks started"
        if "pid=" in line:
            pids.append(int(line.rsplit("=", 1)[1]))
    proc.send_signal(sig)
    assert proc.wait(timeout=15) == 143
    rest = proc.stdout.read()
    assert f"[launcher] the launcher got {signal.Signals(sig).name}" in rest
    for pid in pids:  # the ranks were the launcher's children and have been reaped
        assert not procs.exists(pid)


def test_the_ranks_share_the_launchers_process_group(tmp_path):
    code = "import os; print(f'pgid={os.getpgid(0)} ppid={os.getppid()}')"
    proc = subprocess.run(
        [*LAUNCHER, "--nproc", "2", "python3", script(tmp_path, "pg.py", code)],
        env=env_of(),
        capture_output=True,
        text=True,
        timeout=30,
        start_new_session=True,  # the launcher leads its own group, as under the master
    )
    groups = {line.split()[0] for lines in by_rank(proc.stdout).values() for line in lines}
    assert proc.returncode == 0
    assert len(groups) == 1 and groups != {f"pgid={os.getpgid(0)}"}


@pytest.mark.parametrize(
    ("args", "extra", "message"),
    [
        ([], {"SHIPYARD_SLOT_IDS": "cpu0"}, "no command given"),
        (["--"], {"SHIPYARD_SLOT_IDS": "cpu0"}, "no command given"),
        (["python3", "x.py"], {}, "SHIPYARD_SLOT_IDS is not set"),
        (["python3", "x.py"], {"SHIPYARD_SLOT_IDS": " "}, "--nproc 2 python3 train.py"),
        (["--nproc", "0", "python3", "x.py"], {}, "--nproc takes a number of ranks"),
        (["--nproc"], {}, "--nproc needs a number"),
        (["--nproc", "3", "python3"], {"SHIPYARD_SLOT_IDS": "cpu0,cpu1"}, "does not match"),
        (["--bogus", "python3"], {}, "unknown option '--bogus'"),
        (["python3"], {"SHIPYARD_SLOT_IDS": "cpu0", "SHIPYARD_GANG_GRACE_S": "soon"}, "GRACE"),
    ],
)
def test_bad_input_is_one_line_and_exit_code_2(args, extra, message):
    result = run(args, env_of(**extra))
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert message in result.stderr
    assert result.stderr.startswith("shipyard.launch.torch_distributed: ")


def test_a_command_that_does_not_exist(tmp_path):
    result = run(["--nproc", "2", "no-such-program-here"], env_of())
    assert result.returncode == 127
    assert "[launcher] cannot start rank 0: no-such-program-here" in result.stdout
    assert "Traceback" not in result.stderr


DOC = Path(__file__).resolve().parents[2] / "docs" / "distributed.md"


@pytest.mark.torch
def test_the_docs_example_runs(tmp_path):
    from shipyard.common.config import load_config, validate_context

    text = DOC.read_text()
    (yaml_block,) = re.findall(r"```yaml\n(.*?)```", text, flags=re.S)
    (python_block,) = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    config = load_config(yaml_block, "distributed.md")
    validate_context(config, {"train.py"})  # the launcher's script is checked at submit
    train = script(tmp_path, "train.py", python_block)
    result = run(["--nproc", "2", "python3", train], env_of())
    assert result.returncode == 0, result.stdout + result.stderr
    lines = by_rank(result.stdout)
    assert lines == {0: ["rank 0 of 2: sum 3"], 1: ["rank 1 of 2: sum 3"]}


OWN_ADDRESS = """
import os, sys
import torch
import torch.distributed as dist

# The script's own rendezvous, not env://: the launcher's RANK and WORLD_SIZE still apply.
dist.init_process_group(
    "gloo",
    init_method=f"tcp://127.0.0.1:{sys.argv[1]}",
    rank=int(os.environ["RANK"]),
    world_size=int(os.environ["WORLD_SIZE"]),
)
t = torch.tensor([10.0 * (dist.get_rank() + 1)])
dist.all_reduce(t)
print(f"sum={t.item():g}", flush=True)
dist.destroy_process_group()
"""


def test_a_script_with_its_own_init_method_works_under_the_launcher(tmp_path):
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = str(sock.getsockname()[1])
    own = script(tmp_path, "own.py", OWN_ADDRESS)
    result = run(["--nproc", "2", "--", "python3", own, port], env_of())
    assert result.returncode == 0, result.stdout + result.stderr
    lines = by_rank(result.stdout)
    assert "sum=30" in lines[0] and "sum=30" in lines[1]
