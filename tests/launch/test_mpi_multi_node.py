"""The MPI launcher on several nodes, for real: two launcher processes on this machine, each
playing one node, and one real mpirun on node 0 that starts Open MPI's daemon on node 1
through node 1's launcher (launch/_mpi_agent.py)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from shipyard.launch import _mpi_agent
from shipyard.launch._gang import StopSignals
from shipyard.launch._output import Output
from tests.fixtures.procs import alive
from tests.launch.launcher import by_rank, rank_env, script
from tests.launch.test_mpi import needs_mpi4py
from tests.launch.test_multi_node import MPI, finish_nodes, run_nodes, start_nodes, text_of

pytestmark = pytest.mark.mpi

ONE_WORLD = """
import json, os
from mpi4py import MPI
import shipyard.core

comm = MPI.COMM_WORLD
total = comm.allreduce(comm.rank + 1)
print(f"mpi rank={comm.rank} size={comm.size} sum={total}", flush=True)
for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "SHIPYARD_RANK", "SHIPYARD_LOCAL_RANK",
             "SHIPYARD_NODE_RANK", "SHIPYARD_SLOT_IDS", "MASTER_ADDR", "MASTER_PORT",
             "SHIPYARD_DIST_ADDR"):
    print(f"{name}={os.environ.get(name, '<unset>')}", flush=True)
with shipyard.core.init() as ctx:
    print("allgather=" + json.dumps(ctx.distributed.allgather(ctx.distributed.rank)), flush=True)
"""

FAILS_ON_NODE_1 = """
import os, sys, time
if os.environ["SHIPYARD_RANK"] == "3":
    time.sleep(0.5)
    sys.exit(6)
time.sleep(600)
"""

SLEEPS = """
import os, signal, sys, time

def stop(*_):
    print(f"rank {os.environ['SHIPYARD_RANK']} got SIGTERM", flush=True)
    sys.exit(0)

if os.environ["SHIPYARD_RANK"] == "3":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # killed after the grace
else:
    signal.signal(signal.SIGTERM, stop)
print(f"pid={os.getpid()}", flush=True)
time.sleep(600)
"""


def test_one_mpi_world_spans_two_nodes_with_global_ranks(tmp_path: Path):
    needs_mpi4py()
    results = run_nodes(MPI, ["python3", script(tmp_path, "w.py", ONE_WORLD)], ["cpu0,cpu1"] * 2)
    assert [r.returncode for r in results] == [0, 0], text_of(results)
    lines = by_rank(results[0].stdout)  # every rank's output reaches node 0's launcher
    assert sorted(lines) == [0, 1, 2, 3], text_of(results)
    assert by_rank(results[1].stdout) == {}
    envs = {rank: rank_env(rank_lines) for rank, rank_lines in lines.items()}
    for rank, env in envs.items():
        assert f"mpi rank={rank} size=4 sum=10" in lines[rank]
        assert env["RANK"] == env["SHIPYARD_RANK"] == str(rank)
        assert env["WORLD_SIZE"] == "4"
        # ranks 0-1 on node 0, 2-3 on node 1, as the torch launcher places them
        assert env["SHIPYARD_NODE_RANK"] == str(rank // 2)
        assert env["LOCAL_RANK"] == env["SHIPYARD_LOCAL_RANK"] == str(rank % 2)
        assert env["SHIPYARD_SLOT_IDS"] == f"cpu{rank % 2}"  # the node's own slot
        assert f"allgather={json.dumps([0, 1, 2, 3])}" in lines[rank]
    assert (
        len({(e["MASTER_ADDR"], e["MASTER_PORT"], e["SHIPYARD_DIST_ADDR"]) for e in envs.values()})
        == 1
    )
    assert "[launcher] node 1 of 2: ranks 2-3 of 4 on cpu0,cpu1" in results[1].stdout
    assert "[launcher] Open MPI's daemon exited with code 0" in results[1].stdout


def test_a_rank_failing_on_node_1_is_named_by_node_0(tmp_path: Path):
    code = script(tmp_path, "fail.py", FAILS_ON_NODE_1)
    start = time.monotonic()
    results = run_nodes(MPI, ["python3", code], ["cpu0,cpu1"] * 2, timeout=60)
    took = time.monotonic() - start
    assert results[0].returncode == 6, text_of(results)
    assert "[launcher] rank 3 exited with code 6; mpirun stopped the gang" in results[0].stdout
    assert results[1].returncode == 0, text_of(results)  # the verdict is node 0's
    assert took < 30  # the ranks sleeping 600 s were stopped


def test_sigterm_stops_every_node_s_ranks_with_the_grace(tmp_path: Path):
    procs = start_nodes(
        MPI,
        ["python3", script(tmp_path, "sleep.py", SLEEPS)],
        ["cpu0,cpu1"] * 2,
        {"SHIPYARD_GANG_GRACE_S": "1"},
    )
    try:
        assert procs[0].stdout is not None
        pids = []
        while len(pids) < 4:
            line = procs[0].stdout.readline()
            assert line, "node 0's launcher ended before the four ranks started"
            if "pid=" in line:
                pids.append(int(line.rsplit("=", 1)[1]))
        for proc in procs:  # the backend ends the whole gang
            proc.send_signal(signal.SIGTERM)
        results = finish_nodes(procs, timeout=60)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    assert [r.returncode for r in results] == [143, 143], text_of(results)
    text = text_of(results)
    assert "[rank=2] rank 2 got SIGTERM" in text  # node 1's ranks had their SIGTERM
    assert "the launcher got SIGTERM: sending SIGTERM to this node's 2 rank(s)" in text
    for pid in pids:
        assert not alive(pid), text
    leftover = subprocess.run(["pgrep", "-f", str(tmp_path)], capture_output=True, text=True)
    assert leftover.stdout == "", text


def test_the_agent_port_runs_nothing_without_the_token():
    out = Output(open(os.devnull, "wb"))  # noqa: SIM115 - closed with the process
    host = _mpi_agent.OrtedHost(dict(os.environ), out)
    signals = StopSignals()
    done = threading.Event()
    result: list[int] = []
    thread = threading.Thread(
        target=lambda: result.append(host.serve(signals, done.is_set, 1.0)), daemon=True
    )
    thread.start()
    marker = Path(f"/tmp/shipyard-agent-test-{os.getpid()}")
    with socket.create_connection(("127.0.0.1", host.port), timeout=10) as sock:
        request = {"token": "not-the-token", "command": f"touch {marker}"}
        sock.sendall(json.dumps(request).encode() + b"\n")
        assert sock.recv(1) == b""  # closed without an answer
    done.set()  # as if node 0's launcher left
    thread.join(timeout=10)
    assert result == [1] and host.proc is None and not marker.exists()


def test_the_agent_names_a_host_that_is_not_a_node():
    result = subprocess.run(
        [sys.executable, "-m", _mpi_agent.PROG, "elsewhere", "orted"],
        env={**os.environ, _mpi_agent.AGENTS_ENV: json.dumps({"shipyard-node-1": "h:1:t"})},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 255
    assert "'elsewhere' is not a node of this trial (SHIPYARD_MPI_AGENTS)" in result.stderr
