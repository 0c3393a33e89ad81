"""What each run ran, on a real master with real trials: the git record of the code at
submit, each rank's environment captured at its start, `trial diff` between two trials, and
`trial rerun` reporting the same metrics as the trial it runs again."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.e2e.master import CODE, Master

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

GRID = """
name: two-points
entrypoint: python3 steps.py
hyperparameters:
  steps: 4
  ckpt_every: 2
  x: {type: categorical, vals: [1.0, 2.0]}
searcher: {name: grid, metric: val_loss}
environment:
  environment_variables: [NCCL_DEBUG=INFO, MY_API_TOKEN=tok-2718281828459045]
"""


def git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "Ada",
        "GIT_AUTHOR_EMAIL": "ada@example.com",
        "GIT_COMMITTER_NAME": "Ada",
        "GIT_COMMITTER_EMAIL": "ada@example.com",
    }
    done = subprocess.run(
        ["git", "-C", str(repo), *args], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


@pytest.fixture(scope="module")
def master(tmp_path_factory):
    m = Master(tmp_path_factory.mktemp("records") / "home", slots=2).start()
    yield m
    m.stop()


@pytest.fixture(scope="module")
def grid(master: Master, tmp_path_factory) -> dict:
    """Two trials of one experiment submitted by the CLI from a git work tree with a
    committed file changed and a new file not yet added."""
    repo = tmp_path_factory.mktemp("repo")
    shutil.copy(CODE / "steps.py", repo / "steps.py")
    (repo / "notes.txt").write_text("first\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "remote", "add", "origin", "https://ada:hunter2-secret@git.example.com/ml/x.git")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "first")
    (repo / "notes.txt").write_text("first\nchanged after the commit\n")
    (repo / "untracked.py").write_text("print('new')\n")
    config = tmp_path_factory.mktemp("config") / "config.yaml"
    config.write_text(GRID)
    created = master.cli("experiment", "create", config, repo, "--json")
    assert created.returncode == 0, created.stderr
    exp = master.wait(json.loads(created.stdout)["id"])
    assert exp["state"] == "COMPLETED", exp
    return {"experiment": exp, "commit": git(repo, "rev-parse", "HEAD")}


def test_the_experiment_records_what_git_said_at_submit(master, grid):
    code = grid["experiment"]["code"]
    assert code["commit"] == grid["commit"] and code["branch"] == "main"
    assert code["remote"] == "https://git.example.com/ml/x.git"  # credentials stripped
    assert code["dirty"] is True and code["unpushed"] == [grid["commit"]]
    assert "+changed after the commit" in code["diff"]  # unstaged
    assert "+print('new')" in code["diff"]  # untracked, not ignored
    exp_id = grid["experiment"]["id"]
    assert "hunter2" not in json.dumps(master.http.get(f"/experiments/{exp_id}").json())
    shown = master.cli("experiment", "describe", exp_id)
    assert shown.returncode == 0, shown.stderr
    assert f"{grid['commit'][:12]}, on main, + 2 uncommitted file(s), 1 unpushed" in shown.stdout


def test_each_run_records_its_environment_without_secrets(master, grid):
    trial_id = grid["experiment"]["trials"][0]["id"]
    answer = master.http.get(f"/trials/{trial_id}/environment")
    assert answer.status_code == 200, answer.text
    described = answer.json()
    assert described["run_id"] == 1 and described["code"]["commit"] == grid["commit"]
    (rank,) = described["ranks"]
    sections = rank["record"]["sections"]
    assert sections["python"]["version"] == ".".join(map(str, sys.version_info[:3]))
    assert sections["packages"]["pyyaml"] == yaml.__version__
    assert sections["framework"] == {}  # steps.py never imports torch
    assert sections["env"]["kept"]["NCCL_DEBUG"] == "INFO"
    assert "MY_API_TOKEN" in sections["env"]["redacted"]
    assert "SHIPYARD_TASK_TOKEN" in rank["record"]["volatile"]["env"]["redacted"]
    # The config holds the value as its author wrote it; what the run recorded does not.
    assert "tok-2718281828459045" not in json.dumps(described["ranks"])
    shown = master.cli("trial", "environment", trial_id)
    assert shown.returncode == 0, shown.stderr
    assert grid["commit"] in shown.stdout and "Rank 0" in shown.stdout


def test_trial_diff_names_the_differences_and_exits_1(master, grid):
    a, b = (t["id"] for t in grid["experiment"]["trials"])
    answer = master.cli("trial", "diff", a, b, "--json")
    assert answer.returncode == 1, answer.stderr
    found = json.loads(answer.stdout)
    assert {(d["category"], d["item"]) for d in found["differences"]} == {
        ("hyperparameters", "x"),
        ("config", "reproducibility.trial_seed"),
    }
    shown = master.cli("trial", "diff", a, b)
    assert shown.returncode == 1 and "2 difference(s)" in shown.stdout
    same = master.cli("trial", "diff", a, a)
    assert same.returncode == 0, same.stdout + same.stderr
    assert f"Trials {a} and {a} ran the same thing." in same.stdout


def test_a_diff_of_an_unknown_trial_is_a_404(master, grid):
    a = grid["experiment"]["trials"][0]["id"]
    answer = master.http.get(f"/trials/{a}/diff/999999")
    assert answer.status_code == 404 and "trial 999999" in answer.text


@pytest.mark.torch
def test_a_rerun_of_the_digits_example_reports_identical_metrics(master):
    directory = EXAMPLES / "digits_pytorch"
    config = yaml.safe_load((directory / "const.yaml").read_text())
    config["searcher"]["max_length"] = {"batches": 30}
    config["reproducibility"] = {"experiment_seed": 7}
    first = master.wait(master.create(yaml.safe_dump(config), directory)["id"], timeout=300)
    assert first["state"] == "COMPLETED", first
    trial = first["trials"][0]
    rerun = master.cli("trial", "rerun", trial["id"], "--json")
    assert rerun.returncode == 0, rerun.stderr
    made = json.loads(rerun.stdout)
    assert made["rerun_of"] == trial["id"] and made["forked_from"] == first["id"]
    again = master.wait(made["id"], timeout=300)
    assert again["state"] == "COMPLETED", again
    twin = again["trials"][0]
    assert twin["hparams"] == trial["hparams"]
    assert master.trial(twin["id"])["seed"] == master.trial(trial["id"])["seed"]
    for group, name in (("training", "loss"), ("validation", "validation_accuracy")):
        assert master.metrics(twin["id"], group, name) == master.metrics(trial["id"], group, name)
    assert master.metrics(trial["id"], "validation", "validation_loss")  # the series is real
    differences = master.http.get(f"/trials/{trial['id']}/diff/{twin['id']}").json()
    assert differences["differences"] == [], differences  # same code, config, seed, machine
