"""The Ray backend beyond the contract suite: code travels without a shared path, a 2-slot
trial holds its slots on one node, a killed actor worker loses the run and leaves no process,
and an unreachable cluster is a health problem, not an exception."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import textwrap
import time

import pytest

from shipyard.backends.base import Handle, RunStatus, Slot, TrialLaunchSpec
from shipyard.backends.ray.backend import RayBackend
from shipyard.backends.ray.options import RayOptions
from tests.backends.test_contract import output, wait_exit, wait_output
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
        time.sleep(1)  # the master's copy is deleted meanwhile
        print("cwd", os.getcwd())
        print("data", open("data.txt").read())
        print("config", open(os.environ["SHIPYARD_EXPERIMENT_CONFIG"]).read())
        print("config path", os.environ["SHIPYARD_EXPERIMENT_CONFIG"])
        """,
        backend.capacity()[:1],
        SHIPYARD_EXPERIMENT_CONFIG=str(config),
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
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in pids if _alive(p)], "the trial's processes outlived its actor"
    backend.release(handle)


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


def _alive(pid: int) -> bool:
    try:
        state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
