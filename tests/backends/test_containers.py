"""Trials in containers (environment.image) through the local backend, with Docker and Podman.

The command lines are checked as text (GPUs cannot run here); everything else runs a real
container on a real engine (tests/fixtures/containers.py): the environment reaches the
process, bind mounts are readable and writable as configured, the master on 127.0.0.1 is
reachable, the image's id is recorded, an unknown image is a clear error and nothing is
pulled, and a terminated or recovered trial leaves no container behind.
"""

from __future__ import annotations

import http.server
import json
import os
import re
import subprocess
import threading
import time
from pathlib import Path

import pytest

from shipyard.backends.base import Handle, RunStatus, Slot, TrialLaunchSpec
from shipyard.backends.local.backend import LocalBackend
from shipyard.backends.local.containers import (
    SHIPYARD_LIB,
    ContainerError,
    ContainerRuntime,
    container_env,
    gpu_args,
    mounts_for,
    run_argv,
)
from shipyard.backends.local.options import ContainersConfig
from shipyard.common.config import load_config
from shipyard.common.errors import ConfigError
from shipyard.server.pools import load_master_config
from shipyard.server.workers.launcher import choose_image
from tests.backends.test_contract import output, wait_exit, wait_output
from tests.fixtures.containers import IMAGE
from tests.fixtures.require import missing

CPU = [Slot("cpu0", "cpu", "cpu", 0)]
GPUS = [Slot("gpu1", "gpu", "A100 uuid-1", 1), Slot("gpu3", "gpu", "A100 uuid-3", 3)]


def make_spec(tmp_path: Path, argv: list[str], **kw) -> TrialLaunchSpec:
    workdir = tmp_path / "trial"
    workdir.mkdir(exist_ok=True)
    env = {
        "PYTHONUNBUFFERED": "1",
        "SHIPYARD_CHECKPOINT_STORAGE": json.dumps(
            {"type": "shared_fs", "base_path": str(tmp_path / "checkpoints")}
        ),
        **kw.pop("env", {}),
    }
    return TrialLaunchSpec(
        trial_id=7,
        run_id=2,
        argv=argv,
        env=env,
        workdir=str(workdir),
        slots=kw.pop("slots", CPU),
        image=kw.pop("image", IMAGE),
        log_path=str(tmp_path / "logs" / "trial-7-run-2.log"),
        **kw,
    )


# -- the command line -----------------------------------------------------------------------


def test_the_run_command_mounts_the_trials_paths_and_keeps_values_off_the_command_line(
    tmp_path,
):
    data = tmp_path / "data"
    data.mkdir()
    config = tmp_path / "experiments" / "1" / "config.json"
    config.parent.mkdir(parents=True)
    config.write_text("{}")
    spec = make_spec(
        tmp_path,
        ["python3", "train.py", "--lr", "0.1"],
        env={"API_TOKEN": "s3cret", "SHIPYARD_EXPERIMENT_CONFIG": str(config)},
        bind_mounts=[
            {"host_path": str(data), "container_path": "/data", "read_only": True},
            {"host_path": str(data), "container_path": "relative/data"},
            {"host_path": str(data), "container_path": "/slave", "propagation": "rslave"},
        ],
    )
    docker = ContainerRuntime("docker", "/usr/bin/docker", {})
    argv = run_argv(
        docker,
        spec,
        mounts=mounts_for(spec),
        name="shipyard-trial-7-run-2-x",
        image_ref="sha256:abc",
        env_file="/tmp/env",
        env_names=[],
        extra_args=["--shm-size", "1g"],
    )
    text = " ".join(argv)
    for expected in (
        "/usr/bin/docker run --rm --name shipyard-trial-7-run-2-x",
        "--network host --init --pull never",
        f"--workdir {spec.workdir}",
        "--env-file /tmp/env",
        f"--volume {spec.workdir}:{spec.workdir} ",
        f"--volume {tmp_path}/checkpoints:{tmp_path}/checkpoints ",
        f"--volume {config}:{config}:ro ",
        f"/shipyard:{SHIPYARD_LIB}/shipyard:ro ",
        f"--volume {data}:/data:ro ",
        # a relative container_path is a link in the working dir to host_path
        f"--volume {data}:{data} ",
        f"--volume {data}:/slave:rslave ",
        "--shm-size 1g sha256:abc python3 train.py --lr 0.1",
    ):
        assert expected in text + " ", expected
    assert "s3cret" not in text  # values go through a file only the master's user can read
    assert "--gpus" not in text

    inside = container_env(spec)
    assert inside["API_TOKEN"] == "s3cret"
    # Determined's `determined` is Shipyard's shim inside (docs/determined.md), then shipyard.
    shim = f"{SHIPYARD_LIB}/shipyard/integrations/determined_compat"
    assert inside["PYTHONPATH"] == os.pathsep.join([shim, SHIPYARD_LIB])


def test_gpus_are_docker_gpus_or_podman_cdi_devices_numbered_from_zero_inside(tmp_path):
    spec = make_spec(tmp_path, ["python3", "train.py"], slots=GPUS)
    assert gpu_args("docker", spec) == ["--gpus", '"device=1,3"']
    assert gpu_args("podman", spec) == [
        "--device",
        "nvidia.com/gpu=1",
        "--device",
        "nvidia.com/gpu=3",
    ]
    # The container sees its two GPUs as 0 and 1: the launchers pin ranks by these ids.
    assert container_env(spec)["SHIPYARD_SLOT_IDS"] == "gpu0,gpu1"
    assert gpu_args("docker", make_spec(tmp_path, ["python3"])) == []


def test_bad_bind_mounts_are_errors_naming_the_entry(tmp_path):
    missing = make_spec(
        tmp_path,
        ["python3"],
        bind_mounts=[{"host_path": str(tmp_path / "nope"), "container_path": "/data"}],
    )
    with pytest.raises(ContainerError, match=r"bind_mounts\[0\]\.host_path .*/nope does not"):
        mounts_for(missing)
    spec = make_spec(tmp_path, ["python3"])
    clash = make_spec(
        tmp_path,
        ["python3"],
        bind_mounts=[{"host_path": str(tmp_path), "container_path": spec.workdir}],
    )
    with pytest.raises(ContainerError, match=r"bind_mounts\[0\]\.container_path"):
        mounts_for(clash)
    shared = make_spec(
        tmp_path,
        ["python3"],
        bind_mounts=[
            {"host_path": str(tmp_path), "container_path": "/a"},
            {"host_path": str(tmp_path), "container_path": "/b", "propagation": "sideways"},
        ],
    )
    with pytest.raises(ContainerError, match=r"bind_mounts\[1\]\.propagation 'sideways'"):
        mounts_for(shared)


def test_the_image_of_the_per_device_map_follows_the_slots():
    both = {"cpu": "img:cpu", "cuda": "img:cuda", "gpu": None, "rocm": None}
    assert choose_image("img:any", CPU) == "img:any"
    assert choose_image(None, GPUS) is None
    assert choose_image(both, CPU) == "img:cpu"
    assert choose_image(both, GPUS) == "img:cuda"
    assert choose_image({"gpu": "img:old-name"}, GPUS) == "img:old-name"
    with pytest.raises(ConfigError, match=r"no image for cpu slots: set environment.image.cpu"):
        choose_image({"cuda": "img:cuda", "cpu": None}, CPU)


def test_the_master_config_names_a_bad_containers_setting(tmp_path):
    path = tmp_path / "master.yaml"
    path.write_text("containers: {runtime: lxc}\n")
    with pytest.raises(ConfigError) as bad:
        load_master_config(path)
    assert bad.value.details[0]["path"] == "containers.runtime"
    path.write_text("containers: {runtime: podman, extra_run_args: [--detach]}\n")
    with pytest.raises(ConfigError) as reserved:
        load_master_config(path)
    assert "--detach is set by Shipyard" in str(reserved.value)
    path.write_text("containers: {runtime: docker, extra_run_args: [--shm-size, 1g]}\n")
    assert load_master_config(path).containers.extra_run_args == ["--shm-size", "1g"]


DOC = Path(__file__).resolve().parents[2] / "docs" / "backends" / "containers.md"


def test_the_docs_examples_load(tmp_path):
    blocks = re.findall(r"```yaml\n(.*?)```", DOC.read_text(), flags=re.S)
    master_yaml, *experiments = blocks
    (tmp_path / "master.yaml").write_text(master_yaml)
    assert load_master_config(tmp_path / "master.yaml").containers.runtime == "podman"
    assert len(experiments) == 2
    for block in experiments:
        load_config(block, "containers.md")


# -- which engine ---------------------------------------------------------------------------


def path_with(tmp_path: Path, *names: str) -> dict[str, str]:
    """A PATH holding only these engines' real CLIs."""
    bin_dir = tmp_path / ("bin-" + "-".join(names))
    bin_dir.mkdir()
    for name in names:
        real = ContainerRuntime.named(name)
        if real is None:
            missing(f"{name} is not installed: `make setup` installs it")
        (bin_dir / name).symlink_to(real.exe)
    return {"PATH": str(bin_dir)}


def test_auto_picks_the_engine_that_is_installed_and_names_what_is_missing(tmp_path):
    auto = ContainersConfig()
    assert ContainerRuntime.choose(auto, path_with(tmp_path, "podman")).name == "podman"
    assert ContainerRuntime.choose(auto, path_with(tmp_path, "docker")).name == "docker"
    # both, and no Docker daemon answers: podman
    dead = {**path_with(tmp_path, "docker", "podman"), "DOCKER_HOST": f"unix://{tmp_path}/no"}
    assert ContainerRuntime.choose(auto, dead).name == "podman"
    with pytest.raises(ContainerError, match="neither `docker` nor `podman` is on"):
        ContainerRuntime.choose(auto, {"PATH": str(tmp_path)})
    with pytest.raises(ContainerError, match="containers.runtime is 'docker'.*not on"):
        ContainerRuntime.choose(ContainersConfig(runtime="docker"), path_with(tmp_path))


@pytest.mark.containers
def test_auto_picks_docker_when_its_daemon_answers(tmp_path, docker_engine_env):
    env = {**path_with(tmp_path, "docker", "podman"), **docker_engine_env}
    assert ContainerRuntime.choose(ContainersConfig(), env).name == "docker"


# -- real containers ------------------------------------------------------------------------


@pytest.fixture(params=["docker", "podman"])
def engine_env(request) -> tuple[str, dict[str, str]]:
    """(runtime, the variables that point its CLI at the tests' engine)."""
    fixture = "docker_engine_env" if request.param == "docker" else "podman_env"
    return request.param, request.getfixturevalue(fixture)


def cli(runtime: str, env: dict[str, str], *args: str) -> str:
    result = subprocess.run(
        [runtime, *args], capture_output=True, text=True, env={**os.environ, **env}
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture
def master_stub():
    """A tiny HTTP server on 127.0.0.1 standing in for the master: it records the paths asked."""
    asked: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            asked.append(self.path)
            body = b'{"ok": true}'
            self.send_response(200)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}", asked
    server.shutdown()


PROBE = """
import json, os, sys, urllib.request
import shipyard.core  # from the master's package, mounted read-only
print("token", repr(os.environ["API_TOKEN"]))
print("lines", repr(os.environ["MULTI"]))
print("cwd", os.getcwd())
with open("/data/rw/from-container.txt", "w") as f:
    f.write("written inside")
print("read", open("/data/ro/input.txt").read())
try:
    open("/data/ro/nope.txt", "w")
except OSError as exc:
    print("read-only", exc.errno)
with urllib.request.urlopen(os.environ["SHIPYARD_MASTER"] + "/api/v1/master") as r:
    print("master says", json.load(r))
ckpt = json.loads(os.environ["SHIPYARD_CHECKPOINT_STORAGE"])["base_path"]
open(os.path.join(ckpt, "ckpt.txt"), "w").write("saved")
"""


@pytest.mark.containers
def test_a_trial_in_a_container_gets_its_env_mounts_and_the_master(
    tmp_path, engine_env, master_stub
):
    runtime, env = engine_env
    url, asked = master_stub
    rw, ro = tmp_path / "rw", tmp_path / "ro"
    rw.mkdir()
    ro.mkdir()
    (ro / "input.txt").write_text("from the host")
    spec = make_spec(
        tmp_path,
        ["python3", "probe.py"],
        env={"API_TOKEN": "a secret with spaces", "MULTI": "one\ntwo", "SHIPYARD_MASTER": url},
        bind_mounts=[
            {"host_path": str(rw), "container_path": "/data/rw"},
            {"host_path": str(ro), "container_path": "/data/ro", "read_only": True},
        ],
    )
    (Path(spec.workdir) / "probe.py").write_text(PROBE)
    backend = LocalBackend(slots=2, containers=ContainersConfig(runtime=runtime), engine_env=env)
    handle = backend.launch(spec)
    state = wait_exit(backend, handle)
    text = output(backend, handle)
    assert (state.status, state.exit_code) == (RunStatus.EXITED, 0), text
    assert "token 'a secret with spaces'" in text
    assert "lines 'one\\ntwo'" in text
    assert f"cwd {spec.workdir}" in text
    assert "read from the host" in text
    assert "read-only 30" in text  # EROFS
    assert "master says {'ok': True}" in text and asked == ["/api/v1/master"]
    assert (rw / "from-container.txt").read_text() == "written inside"
    assert (tmp_path / "checkpoints" / "ckpt.txt").read_text() == "saved"

    inspected = json.loads(cli(runtime, env, "image", "inspect", IMAGE))[0]
    recorded = handle.data[Handle.ENVIRONMENT]
    assert recorded["runtime"] == runtime and recorded["image"] == IMAGE
    assert recorded["image_id"] == inspected["Id"]
    if runtime == "podman":  # docker import gives no digest; podman's image has one
        assert recorded["image_digest"] == inspected["Digest"]
    backend.release(handle)
    assert not Path(handle.data["container"]["env_file"]).exists()  # the secrets' file


@pytest.mark.containers
def test_an_unknown_image_is_a_clear_error_and_nothing_is_pulled(tmp_path, engine_env):
    runtime, env = engine_env
    before = cli(runtime, env, "images", "-q", "--no-trunc")
    backend = LocalBackend(slots=2, containers=ContainersConfig(runtime=runtime), engine_env=env)
    spec = make_spec(tmp_path, ["python3", "-c", "pass"], image="shipyard-test:missing")
    with pytest.raises(ContainerError) as err:
        backend.launch(spec)
    assert str(err.value) == (
        f"image 'shipyard-test:missing' not found locally by {runtime} (Shipyard never pulls): "
        f"build or load it first, e.g. `{runtime} load -i image.tar`"
    )
    assert cli(runtime, env, "images", "-q", "--no-trunc") == before
    assert not Path(spec.log_path).with_suffix(".exit.pid").exists()  # nothing started


IGNORES_SIGTERM = """
import signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("ready", flush=True)
time.sleep(600)
"""


@pytest.mark.containers
def test_a_trial_found_after_a_master_restart_is_killed_with_its_container(tmp_path, engine_env):
    runtime, env = engine_env
    spec = make_spec(tmp_path, ["python3", "-c", IGNORES_SIGTERM])
    backend = LocalBackend(slots=2, containers=ContainersConfig(runtime=runtime), engine_env=env)
    handle = backend.launch(spec)
    wait_output(backend, handle, "ready")
    name = handle.data["container"]["name"]
    assert name.startswith("shipyard-trial-7-run-2-")
    assert cli(runtime, env, "ps", "-q", "--filter", f"name={name}").strip()

    # A new master that never recorded the handle finds the run by its log path.
    restarted = LocalBackend(slots=2, containers=ContainersConfig(runtime=runtime), engine_env=env)
    found = restarted.find_launch(spec.log_path)
    assert found is not None and found.data["container"]["name"] == name
    started = time.monotonic()
    restarted.terminate(found, grace_s=1)
    state = wait_exit(restarted, found, timeout=30)
    assert state.status in (RunStatus.EXITED, RunStatus.LOST) and state.exit_code != 0
    assert time.monotonic() - started < 15
    assert cli(runtime, env, "ps", "-aq", "--filter", f"name={name}").strip() == ""
