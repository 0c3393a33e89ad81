"""A real master whose config picks Docker or Podman runs experiments with an
environment.image: the trials run in containers of the locally built test image, report
metrics and checkpoints to the master on 127.0.0.1, and each run records the image and its id
(`trial describe` shows them). An image that is not there fails the trial with a reason a
person can act on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.master import Master
from tests.fixtures.containers import IMAGE

pytestmark = pytest.mark.containers

CODE = Path(__file__).parent / "trial_code"
SHIPYARD = Path(sys.executable).parent / "shipyard"


def experiment(name: str, image: str, max_restarts: int = 0) -> str:
    return f"""
name: {name}
entrypoint: python3 steps.py
hyperparameters: {{steps: 6, ckpt_every: 3}}
searcher: {{name: single, metric: val_loss}}
environment:
  image: {image}
  environment_variables: [OMP_NUM_THREADS=1]
max_restarts: {max_restarts}
"""


@pytest.fixture(scope="module", params=["docker", "podman"])
def container_master(request, tmp_path_factory):
    """A master with `containers: {runtime: ...}`, its environment pointing the engine's CLI
    at the tests' engine (as DOCKER_HOST or CONTAINERS_CONF would on a real machine)."""
    runtime = request.param
    engine_env = request.getfixturevalue(
        "docker_engine_env" if runtime == "docker" else "podman_env"
    )
    with pytest.MonkeyPatch.context() as mp:
        for key, value in engine_env.items():
            mp.setenv(key, value)
        master = Master(
            tmp_path_factory.mktemp(f"containers-{runtime}") / "home",
            slots=2,
            config=f"containers: {{runtime: {runtime}}}\n",
        ).start()
    yield runtime, engine_env, master
    master.stop()


def image_id(runtime: str, engine_env: dict[str, str]) -> str:
    out = subprocess.run(
        [runtime, "image", "inspect", IMAGE],
        capture_output=True,
        text=True,
        env={**os.environ, **engine_env},
        check=True,
    ).stdout
    return json.loads(out)[0]["Id"]


def test_string_and_per_device_images_run_the_trials_in_containers(container_master):
    runtime, engine_env, master = container_master
    by_string = master.create(experiment("in-a-container", IMAGE), CODE)
    by_device = master.create(
        experiment("per-device", f"{{cpu: {IMAGE}, cuda: 'shipyard-test:cuda-is-not-here'}}"),
        CODE,
    )
    expected_id = image_id(runtime, engine_env)
    for exp in (by_string, by_device):
        done = master.wait(exp["id"], timeout=90)
        trial = master.trial(done["trials"][0]["id"])
        assert (done["state"], trial["state"]) == ("COMPLETED", "COMPLETED"), master.logs(
            trial["id"]
        )
        losses = master.metrics(trial["id"], "training", "loss")
        assert [step for step, _ in losses] == [1, 2, 3, 4, 5, 6]
        assert [s for s, _ in master.metrics(trial["id"], "validation", "val_loss")] == [3, 6]
        assert "finished" in master.logs(trial["id"])
        # The checkpoint was written inside the container, at the host's path.
        checkpoint = master.home / "checkpoints" / trial["latest_checkpoint"] / "state.json"
        assert json.loads(checkpoint.read_text()) == {"step": 6}
        (run,) = trial["runs"]
        assert run["environment"]["runtime"] == runtime
        assert run["environment"]["image"] == IMAGE
        assert run["environment"]["image_id"] == expected_id

    shown = subprocess.run(
        [str(SHIPYARD), "trial", "describe", str(by_device["trials"][0]["id"])],
        capture_output=True,
        text=True,
        env={**os.environ, "SHIPYARD_MASTER": master.url, "COLUMNS": "300"},
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    assert f"runtime={runtime}" in shown.stdout
    assert f"image={IMAGE}" in shown.stdout
    assert f"image_id={expected_id}" in shown.stdout


def test_a_missing_image_fails_the_trial_saying_what_to_do(container_master):
    runtime, _, master = container_master
    missing = master.create(experiment("missing-image", "shipyard-test:missing"), CODE)
    # max_restarts 5: a launch that can never work is not restarted
    no_cpu = master.create(
        experiment("no-cpu-image", "{cuda: shipyard-test:cuda-only}", max_restarts=5), CODE
    )
    reasons = {}
    for name, exp in (("missing", missing), ("no_cpu", no_cpu)):
        done = master.wait(exp["id"], timeout=60)
        assert done["state"] == "ERRORED"
        reasons[name] = master.trial(done["trials"][0]["id"])["exit_reason"]
    assert (
        f"launch failed: image 'shipyard-test:missing' not found locally by {runtime} "
        "(Shipyard never pulls): build or load it first"
    ) in reasons["missing"]
    assert reasons["no_cpu"] == (
        "launch failed: environment.image has no image for cpu slots: "
        "set environment.image.cpu (it names cuda); not restarted: it would fail the same way"
    )
    assert len(master.trial(master.experiment(no_cpu["id"])["trials"][0]["id"])["runs"]) == 1


def test_secrets_reach_the_container_masked_and_stay_out_of_files(container_master):
    """The masking wrapper runs in the image (shipyard is mounted there), the secret file's
    directory is mounted, and the value goes through the engine CLI's environment, not
    the env file beside the run's log."""
    runtime, _, master = container_master
    value = f"in-the-{runtime}-box/Secret+Value=0123456789"
    made = master.http.put("/workspaces/Uncategorized/secrets/BOX_SECRET", json={"value": value})
    assert made.status_code == 200, made.text
    config = f"""
name: secrets-in-a-container
entrypoint: python3 secret_echo.py
hyperparameters: {{env: BOX_SECRET, file: box/key.txt}}
searcher: {{name: single, metric: val_loss}}
environment: {{image: {IMAGE}}}
secrets: [BOX_SECRET, {{name: BOX_SECRET, file: box/key.txt}}]
max_restarts: 0
"""
    done = master.wait(master.create(config, CODE)["id"], timeout=90)
    trial = master.trial(done["trials"][0]["id"])
    assert trial["state"] == "COMPLETED", trial
    logs = master.logs(trial["id"])
    assert f"run 1: the secret has {len(value)} characters" in logs
    assert "the secret file matches the variable: True" in logs
    assert "marker-raw ********" in logs and "marker-split ********" in logs
    for path in (master.home / "logs").rglob("*"):
        assert value not in path.read_text(errors="replace"), path
