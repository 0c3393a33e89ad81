"""The Backend contract, run against every engine: launch, poll, output, terminate (SIGTERM
first, SIGKILL after the grace), recover by a new backend instance (a restarted master), and
a gang of two slots. Each engine is real (local processes, a Slurm cluster, a Ray cluster,
Docker and Podman running the trial in a container); an engine whose fixture is missing is
skipped with the reason."""

from __future__ import annotations

import dataclasses
import os
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator

import pytest

from shipyard.backends.base import Backend, Handle, LogSource, RunState, RunStatus, TrialLaunchSpec
from tests.backends.engine import Engine
from tests.fixtures.poll import poll

ENGINES = ["local", "slurm", "ray", "docker", "podman", "kubernetes"]
MARKS = {
    "slurm": pytest.mark.slurm,
    "docker": pytest.mark.containers,
    "podman": pytest.mark.containers,
    "kubernetes": pytest.mark.containers,
}
TIMEOUT_S = 60.0


@pytest.fixture(params=[pytest.param(name, marks=MARKS.get(name, ())) for name in ENGINES])
def engine(request) -> Iterator[Engine]:
    try:
        found: Engine = request.getfixturevalue(f"{request.param}_engine")
    except pytest.FixtureLookupError:
        pytest.skip(f"no {request.param}_engine fixture (the {request.param} backend's tests)")
    made: list[Backend] = []

    def make_backend() -> Backend:
        made.append(found.make_backend())
        return made[-1]

    yield dataclasses.replace(found, make_backend=make_backend)
    for backend in made:  # their threads and helper processes (the Ray driver) end here
        backend.close()


def launch(engine: Engine, backend: Backend, code: str, slots: int = 1, argv=None):
    """Run ``code`` (Python) as a trial on ``slots`` slots of the engine."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    script = engine.workdir / f"{name}.py"
    script.write_text(textwrap.dedent(code))
    chosen = backend.capacity()[:slots]
    assert len(chosen) == slots, f"the {engine.name} engine has fewer than {slots} slots"
    python = "python3" if engine.image else sys.executable  # an image has its own python3
    env = {
        "PYTHONUNBUFFERED": "1",
        "SHIPYARD_SLOT_IDS": ",".join(s.id for s in chosen),
        "CONTRACT_DIR": str(engine.workdir),
        "CONTRACT_NAME": name,
    }
    if not engine.image:
        env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    if argv is None:
        argv = [python, str(script)]
    else:
        argv = [a.replace("{script}", str(script)).replace("{python}", python) for a in argv]
    spec = TrialLaunchSpec(
        trial_id=1,
        run_id=1,
        argv=argv,
        env=env,
        workdir=str(engine.workdir),
        slots=chosen,
        log_path=str(engine.workdir / f"{name}.log"),
        image=engine.image,
    )
    return backend.launch(spec), name


def wait_exit(backend: Backend, handle: Handle, timeout: float = TIMEOUT_S) -> RunState:
    return poll(
        lambda: backend.poll(handle),
        "the run to end",
        until=lambda state: state.status != RunStatus.RUNNING,
        timeout_s=timeout,
        every_s=0.1,
    )


def output(backend: Backend, handle: Handle, final: bool = True) -> str:
    assert isinstance(backend, LogSource)
    text, offset = b"", 0
    while True:
        chunk, offset = backend.read_output(handle, offset, final=final)
        if not chunk:
            return text.decode()
        text += chunk


def wait_output(backend: Backend, handle: Handle, needle: str) -> None:
    def printed() -> str:
        text = output(backend, handle, final=False)
        if needle not in text:
            assert backend.poll(handle).status == RunStatus.RUNNING, output(backend, handle)
        return text

    poll(
        printed,
        f"{needle!r} in the output",
        until=lambda text: needle in text,
        timeout_s=TIMEOUT_S,
        every_s=0.1,
    )


def test_exit_code_and_output(engine):
    backend = engine.make_backend()
    handle, _ = launch(
        engine,
        backend,
        """
        import sys
        # One write a line: unbuffered print() writes the text and its newline apart, and
        # `docker run` copies the two streams on their own, so a line of one stream can
        # land between the other's text and its newline.
        sys.stdout.write("to stdout\\n")
        sys.stderr.write("to stderr\\n")
        raise SystemExit(3)
        """,
    )
    state = wait_exit(backend, handle)
    assert (state.status, state.exit_code) == (RunStatus.EXITED, 3)
    assert backend.poll(handle) == state  # idempotent
    text = output(backend, handle)
    assert "to stdout\n" in text and "to stderr\n" in text


def test_a_death_by_signal_is_recorded_as_minus_the_signal(engine):
    # As Popen reports it, whatever shell, keeper or container runtime stood in between: the
    # master then says "killed by signal 15" on every backend.
    backend = engine.make_backend()
    handle, _ = launch(engine, backend, "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)")
    state = wait_exit(backend, handle)
    assert (state.status, state.exit_code) == (RunStatus.EXITED, -15)


IGNORES_TERM = """
import signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("ready", flush=True)
time.sleep(600)
"""
TERM_HANDLER = """
import os, signal, sys, time
def on_term(*_):
    name = os.environ["CONTRACT_NAME"] + ".term"
    with open(os.path.join(os.environ["CONTRACT_DIR"], name), "w") as f:
        f.write("checkpointed")
    sys.exit(0)
signal.signal(signal.SIGTERM, on_term)
print("ready", flush=True)
time.sleep(600)
"""


def test_terminate_sends_sigterm_first(engine):
    backend = engine.make_backend()
    handle, name = launch(engine, backend, TERM_HANDLER)
    wait_output(backend, handle, "ready")
    backend.terminate(handle, grace_s=10)
    state = wait_exit(backend, handle)
    assert state.status == RunStatus.EXITED
    assert (engine.workdir / f"{name}.term").read_text() == "checkpointed"


def test_terminate_kills_after_the_grace(engine):
    backend = engine.make_backend()
    handle, _ = launch(engine, backend, IGNORES_TERM)
    wait_output(backend, handle, "ready")
    started = time.monotonic()
    backend.terminate(handle, grace_s=1)
    state = wait_exit(backend, handle, timeout=30)
    assert state.status in (RunStatus.EXITED, RunStatus.LOST)
    assert state.exit_code != 0
    assert time.monotonic() - started < 30


def test_a_new_backend_instance_recovers_a_running_trial(engine):
    backend = engine.make_backend()
    handle, name = launch(
        engine,
        backend,
        """
        import os, time
        go = os.path.join(os.environ["CONTRACT_DIR"], os.environ["CONTRACT_NAME"] + ".go")
        print("waiting", flush=True)
        while not os.path.exists(go):
            time.sleep(0.05)
        print("went on", flush=True)
        raise SystemExit(5)
        """,
    )
    wait_output(backend, handle, "waiting")
    backend.close()  # the master goes away; the trial keeps running

    restarted = engine.make_backend()
    recovered = restarted.recover(dict(handle.data))
    assert recovered is not None
    assert restarted.poll(recovered).status == RunStatus.RUNNING
    (engine.workdir / f"{name}.go").touch()
    state = wait_exit(restarted, recovered)
    assert (state.status, state.exit_code) == (RunStatus.EXITED, 5)
    assert "waiting\nwent on\n" in output(restarted, recovered)
    restarted.close()


def test_a_two_slot_gang_runs_both_ranks_through_the_launcher(engine):
    backend = engine.make_backend()
    if len(backend.capacity()) < 2:
        pytest.skip(f"the {engine.name} engine has one slot")
    handle, _ = launch(
        engine,
        backend,
        """
        import os
        print("rank", os.environ["RANK"], "of", os.environ["WORLD_SIZE"], flush=True)
        """,
        slots=2,
        argv=["{python}", "-m", "shipyard.launch.torch_distributed", "{python}", "{script}"],
    )
    state = wait_exit(backend, handle)
    text = output(backend, handle)
    assert (state.status, state.exit_code) == (RunStatus.EXITED, 0), text
    assert "[rank=0] rank 0 of 2" in text and "[rank=1] rank 1 of 2" in text
