"""The Python SDK (`shipyard.client.Shipyard`) against a real master running real trials,
and the SDK snippets of README.md and docs/cli.md run as a user would run them."""

from __future__ import annotations

import getpass
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from shipyard.client import Shipyard
from shipyard.common.errors import ConfigError, Conflict, MasterUnavailable, NotFound
from tests.e2e.master import Master, free_port

REPO = Path(__file__).resolve().parents[2]
CODE = Path(__file__).parent / "trial_code"
README_URL = "http://127.0.0.1:8080"  # the master address the README's snippet names

SEARCH = """\
name: sdk-search
entrypoint: python3 steps.py
hyperparameters:
  x: {type: double, minval: -1, maxval: 1}
  steps: 6
  ckpt_every: 3
searcher: {name: random, metric: val_loss, max_trials: 2, max_concurrent_trials: 2}
max_restarts: 0
"""


@pytest.fixture(scope="module")
def master(tmp_path_factory):
    """One master for this module: each test works on experiments of its own."""
    m = Master(tmp_path_factory.mktemp("sdk") / "home", slots=2).start()
    yield m
    m.stop()


@pytest.fixture(scope="module")
def sy(master):
    with Shipyard(master.url) as client:
        yield client


@pytest.fixture(scope="module")
def search(sy, tmp_path_factory):
    """(what create_experiment returned, what wait returned) for a 2-trial random search."""
    config = tmp_path_factory.mktemp("search") / "search.yaml"
    config.write_text(SEARCH)
    created = sy.create_experiment(config, CODE)
    return created, sy.wait(created.id, timeout=120)


def python_blocks(markdown: Path, needle: str) -> list[str]:
    blocks = re.findall(r"^```python\n(.*?)^```", markdown.read_text(), re.S | re.M)
    return [block for block in blocks if needle in block]


def run_snippet(code: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    """Run a snippet as a script from the repository root, as a user following the docs."""
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=180,
    )


def snippet_env(**extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("SHIPYARD_")}
    # The user's Shipyard home, where the token for the master is kept (as after login).
    env["SHIPYARD_HOME"] = os.environ["SHIPYARD_HOME"]
    env.update(extra)
    return env


def test_create_experiment_and_wait(search):
    created, done = search
    assert created.name == "sdk-search" and created.context_id
    assert created.owner == done.owner == getpass.getuser()  # who submitted it
    assert created.state in ("ACTIVE", "COMPLETED")
    assert (done.id, done.state, done.num_trials) == (created.id, "COMPLETED", 2)
    assert [t.state for t in done.trials] == ["COMPLETED", "COMPLETED"]
    best = min(done.trials, key=lambda t: t.best_validation)
    assert (done.best_trial_id, done.best_validation) == (best.id, best.best_validation)


def test_list_experiments(sy, search):
    exp_id = search[0].id
    assert exp_id in [e.id for e in sy.list_experiments()]
    assert exp_id in [e.id for e in sy.list_experiments(state="COMPLETED")]
    assert exp_id not in [e.id for e in sy.list_experiments(state="ERRORED")]
    newest = sy.list_experiments(limit=1)
    assert len(newest) == 1 and newest[0].id == max(e.id for e in sy.list_experiments())


def test_trial_and_its_metrics_and_logs(sy, search):
    done = search[1]
    trial = sy.trial(done.best_trial_id)
    assert (trial.id, trial.experiment_id, trial.state) == (
        done.best_trial_id,
        done.id,
        "COMPLETED",
    )
    assert trial.steps_completed == 6 and trial.latest_checkpoint
    assert trial.best_validation == pytest.approx(trial.hparams["x"] ** 2 + 1 / 6)
    summaries = {(m.group, m.name): m for m in trial.metrics}
    assert summaries[("training", "loss")].count == 6

    [loss] = sy.trial_metrics(trial.id, group="training", name="loss")
    assert (loss.trial_id, loss.group, loss.name) == (trial.id, "training", "loss")
    assert [p.steps_completed for p in loss.points] == [1, 2, 3, 4, 5, 6]
    assert loss.points[-1].value == pytest.approx(1 / 6)
    [val] = sy.trial_metrics(trial.id, group="validation")
    assert val.name == "val_loss" and [p.steps_completed for p in val.points] == [3, 6]
    assert {(s.group, s.name) for s in sy.trial_metrics(trial.id)} >= {
        ("training", "loss"),
        ("validation", "val_loss"),
    }

    assert [line.text for line in sy.trial_logs(trial.id)][-1] == "finished"


def test_checkpoints_and_download(sy, search, tmp_path):
    done = search[1]
    checkpoints = sy.checkpoints(done.id)
    assert {c.experiment_id for c in checkpoints} == {done.id}
    by_uuid = {c.uuid: c for c in checkpoints}
    for trial in done.trials:  # each trial's latest checkpoint is listed
        assert by_uuid[trial.latest_checkpoint].trial_id == trial.id
        assert by_uuid[trial.latest_checkpoint].steps_completed == 6

    chosen = by_uuid[done.trials[0].latest_checkpoint]
    dest = sy.download_checkpoint(chosen.uuid, tmp_path / "ckpt")
    assert dest == tmp_path / "ckpt"
    assert sorted(p.name for p in dest.iterdir()) == ["metadata.json", "state.json"]
    assert json.loads((dest / "state.json").read_text()) == {"step": 6}
    assert json.loads((dest / "metadata.json").read_text())["uuid"] == chosen.uuid


def test_kill_a_running_experiment(sy, master, tmp_path):
    config = tmp_path / "gated.yaml"
    config.write_text(
        "name: sdk-gated\n"
        "entrypoint: python3 gated.py\n"
        f"hyperparameters:\n  gate: {json.dumps(str(tmp_path / 'never-created'))}\n"
        "searcher: {name: single, metric: val_loss}\n"
    )
    exp = sy.create_experiment(config, CODE)
    trial_id = master.wait_for(lambda: sy.get_experiment(exp.id).trials, what="trial")[0].id
    try:
        master.wait_for(lambda: sy.trial(trial_id).state == "RUNNING", timeout=90, what="run")
        result = sy.kill(exp.id)
        assert (result.id, result.state) == (exp.id, "CANCELED")
        done = sy.wait(exp.id, timeout=120)
    finally:
        master.http.post(f"/experiments/{exp.id}/kill")
    assert done.state == "CANCELED"
    master.wait_for(lambda: sy.trial(trial_id).state == "CANCELED", what="CANCELED trial")
    assert sy.trial(trial_id).exit_reason == "the experiment was killed"


def test_typed_errors(sy, search):
    with pytest.raises(NotFound, match="experiment 999999 does not exist"):
        sy.get_experiment(999999)
    with pytest.raises(NotFound, match="trial 999999 does not exist"):
        sy.trial(999999)
    with pytest.raises(NotFound, match="does not exist"):
        sy.download_checkpoint("00000000-0000-0000-0000-000000000000", "/nonexistent/dest")
    with pytest.raises(Conflict, match="is COMPLETED; it cannot be paused"):
        sy.pause(search[0].id)


def test_invalid_config_raises_config_error_and_creates_nothing(sy, tmp_path):
    config = tmp_path / "typo.yaml"
    config.write_text(SEARCH.replace("max_restarts: 0", "max_restart: 0"))
    before = [e.id for e in sy.list_experiments()]
    with pytest.raises(ConfigError) as caught:
        sy.create_experiment(config, CODE)
    assert [d["path"] for d in caught.value.details] == ["max_restart"]
    assert "did you mean 'max_restarts'" in caught.value.details[0]["message"]
    assert [e.id for e in sy.list_experiments()] == before


def test_unreachable_master_raises_master_unavailable():
    url = f"http://127.0.0.1:{free_port()}"
    with Shipyard(url) as client, pytest.raises(MasterUnavailable, match="shipyard up"):
        client.list_experiments()


def test_master_from_the_environment(master, monkeypatch):
    monkeypatch.setenv("SHIPYARD_MASTER", master.url)
    with Shipyard() as client:
        assert client.url == master.url
        info = client.master_info()
        assert (info.backend, info.database) == ("local", "sqlite")
        assert [s.id for s in client.slots()] == ["cpu0", "cpu1"]


def test_times_carry_their_time_zone(search):
    done = search[1]
    assert done.created_at.tzinfo is not None and done.ended_at.tzinfo is not None
    assert all(t.started_at.tzinfo is not None for t in done.trials)


def test_readme_sdk_snippet_runs(master):
    """README.md's snippet, as printed, from the repository root. The one change: it names
    the master http://127.0.0.1:8080, and this test's master listens on a free port."""
    [snippet] = python_blocks(REPO / "README.md", "shipyard.client")
    assert README_URL in snippet
    result = run_snippet(snippet.replace(README_URL, master.url), snippet_env())
    assert result.returncode == 0, result.stderr
    first, *checkpoints = result.stdout.splitlines()
    state, best = first.split()
    assert state == "COMPLETED" and float(best) >= 0
    assert checkpoints, result.stdout
    for line in checkpoints:  # "<uuid> <steps_completed>"
        uuid, steps = line.split()
        assert master.http.get(f"/checkpoints/{uuid}").json()["steps_completed"] == int(steps)


def test_cli_doc_sdk_snippet_runs(master, tmp_path):
    """docs/cli.md's snippet, with `Shipyard()` finding the master through SHIPYARD_MASTER.
    The one change: it downloads to ./best, which is moved to a temporary directory."""
    [snippet] = python_blocks(REPO / "docs" / "cli.md", "shipyard.client")
    assert '"./best"' in snippet
    best = tmp_path / "best"
    code = snippet.replace('"./best"', json.dumps(str(best)))
    result = run_snippet(code, snippet_env(SHIPYARD_MASTER=master.url))
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in best.iterdir()) == ["metadata.json", "state.json"]
    assert json.loads((best / "state.json").read_text())["step"] == 100
