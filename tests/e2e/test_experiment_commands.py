"""The experiment commands Determined users reach for, against one real master running real
(short) trials: create with --config overrides and --paused, continue, fork, set name,
description and labels, list with filters and pages, delete; and the SDK's experiment and
trial objects (top_checkpoint, list_trials, wait, to_dataframe).

`continue` and `fork` are shown to keep the original experiment's records: its trials,
their metric points, its checkpoints and its config."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from shipyard.client import Shipyard
from shipyard.common.errors import Conflict, InvalidRequest
from tests.e2e.master import Master
from tests.fixtures.cli import run_cli

CODE = Path(__file__).parent / "trial_code"

SINGLE = """\
name: ec-single
entrypoint: python3 to_length.py
hyperparameters: {x: 0.5, every: 2}
searcher: {name: single, metric: val_loss, max_length: 4}
max_restarts: 0
checkpoint_storage: {save_trial_best: 100, save_trial_latest: 100}  # every one kept
"""

GRID = """\
name: ec-grid
entrypoint: python3 to_length.py
hyperparameters:
  x: 0.5
  every: 2
  crash_at: {type: categorical, vals: [0, 3]}
searcher: {name: grid, metric: val_loss, max_length: 4}
max_restarts: 0
checkpoint_storage: {save_trial_best: 100, save_trial_latest: 100}
"""

SDK_GRID = """\
name: ec-sdk-grid
entrypoint: python3 to_length.py
hyperparameters:
  x: {type: categorical, vals: [0.1, 0.9]}
  every: 2
searcher: {name: grid, metric: val_loss, max_length: 4}
max_restarts: 0
checkpoint_storage: {save_trial_best: 100, save_trial_latest: 100}
"""


@pytest.fixture(scope="module")
def master(tmp_path_factory):
    m = Master(tmp_path_factory.mktemp("expcmds") / "home", slots=4).start()
    yield m
    m.stop()


@pytest.fixture(scope="module")
def configs(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("configs")


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(text)
    return path


def ok(result: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    assert "Traceback" not in result.stderr
    return result


def failed(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 1, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    assert "Traceback" not in result.stderr, result.stderr
    assert result.stderr.startswith("error: "), result.stderr
    return result.stderr


def created_id(result: subprocess.CompletedProcess) -> int:
    match = re.search(r"^Created experiment (\d+)", ok(result).stdout, re.M)
    assert match, result.stdout
    return int(match.group(1))


def records(master: Master, exp_id: int) -> dict:
    """What an experiment has recorded: its config, its trials (id, hparams, runs), their
    metric points, its checkpoints."""
    exp = master.experiment(exp_id)
    points = {}
    for t in exp["trials"]:
        for group, name in (("training", "loss"), ("validation", "val_loss")):
            points[(t["id"], group)] = master.metrics(t["id"], group, name)
    ckpts = master.http.get(f"/experiments/{exp_id}/checkpoints").json()
    return {
        "config": exp["config"],
        "trials": {t["id"]: t["hparams"] for t in exp["trials"]},
        "points": points,
        "checkpoints": {c["uuid"]: c["steps_completed"] for c in ckpts},
    }


RANDOM = SINGLE.replace("{name: single,", "{name: random, max_trials: 1,").replace(
    "x: 0.5", "x: {type: double, minval: 0, maxval: 1}"
)


@pytest.fixture(scope="module")
def made(master) -> dict[str, int]:
    """The experiments the tests start from, submitted at once: their trials run side by
    side while the first tests run."""
    return {
        name: master.create(config, CODE)["id"]
        for name, config in [
            ("single", SINGLE),
            ("grid", GRID),
            ("random", RANDOM),
            ("doomed", SINGLE.replace("ec-single", "ec-doomed")),
            ("sdk", SDK_GRID),
        ]
    }


@pytest.fixture(scope="module")
def single(master, made) -> int:
    """A completed single-trial experiment that trained to 4 steps."""
    assert master.wait(made["single"])["state"] == "COMPLETED"
    return made["single"]


# -- create: --config and --paused ------------------------------------------------------------


def test_create_with_overrides_paused_then_activated(master, made, configs):
    config = write(configs, "single.yaml", SINGLE)
    exp_id = created_id(
        master.cli(
            "experiment", "create", config, CODE, "--paused",
            "--config", "hyperparameters.x=0.25",
            "--config", "searcher.max_length=2",
            "--config", "labels=[a, b]",
        )
    )  # fmt: skip
    exp = master.experiment(exp_id)
    assert exp["state"] == "PAUSED"
    assert [t["state"] for t in exp["trials"]] == ["PAUSED"]  # nothing started
    assert exp["config"]["hyperparameters"]["x"] == {"type": "const", "val": 0.25}
    assert exp["config"]["searcher"]["max_length"] == 2
    assert exp["labels"] == ["a", "b"]
    ok(master.cli("experiment", "activate", exp_id))
    done = master.wait(exp_id)
    assert done["state"] == "COMPLETED" and done["trials"][0]["steps_completed"] == 2


def test_create_overrides_name_the_bad_key(master, configs):
    config = write(configs, "single.yaml", SINGLE)
    before = len(master.http.get("/experiments").json())
    assert "expected KEY=VALUE" in failed(
        master.cli("experiment", "create", config, CODE, "--config", "hyperparameters.x")
    )
    message = failed(
        master.cli("experiment", "create", config, CODE, "--config", "searcher.max_length=-3")
    )
    assert "searcher.max_length" in message
    message = failed(master.cli("experiment", "create", config, CODE, "--config", "name.first=a"))
    assert "name.first" in message and "not a section" in message
    assert len(master.http.get("/experiments").json()) == before  # nothing was created


# -- continue ---------------------------------------------------------------------------------


def test_continue_trains_longer_and_keeps_the_records(master, single):
    before = records(master, single)
    [trial_id] = before["trials"]
    assert [s for s, _ in before["points"][(trial_id, "training")]] == [1, 2, 3, 4]

    assert ok(master.cli("experiment", "continue", single, "--max-length", "7")).stdout == (
        f"Continued experiment {single}\n"
    )
    done = master.wait(single)
    assert done["state"] == "COMPLETED"
    after = records(master, single)
    assert after["trials"] == before["trials"]  # the same trial went on
    trial = master.trial(trial_id)
    assert trial["run_id"] == 2 and trial["steps_completed"] == 7
    assert "resumed from step 4" in master.logs(trial_id)
    for key, points in before["points"].items():  # every old point kept as it was
        assert after["points"][key][: len(points)] == points
    assert [s for s, _ in after["points"][(trial_id, "training")]] == list(range(1, 8))
    assert set(before["checkpoints"]) <= set(after["checkpoints"])
    assert max(after["checkpoints"].values()) == 7
    assert after["config"]["searcher"]["max_length"] == 7
    assert {k: v for k, v in after["config"].items() if k != "searcher"} == {
        k: v for k, v in before["config"].items() if k != "searcher"
    }


def test_continue_refuses_what_it_cannot_do(master, single, configs):
    master.wait(single)
    assert "nothing to continue" in failed(master.cli("experiment", "continue", single))
    assert "shorter" in failed(master.cli("experiment", "continue", single, "--max-length", "1"))
    assert "random" in failed(master.cli("experiment", "continue", single, "--max-trials", "3"))
    asha = master.http.post(
        "/experiments",
        json={
            "config_yaml": "name: ec-asha\nentrypoint: python3 to_length.py\n"
            "hyperparameters: {x: {type: double, minval: 0, maxval: 1}}\n"
            "searcher: {name: async_halving, metric: val_loss, max_length: 8, max_trials: 2,"
            " num_rungs: 2}\n",
            "context_id": master.upload(CODE),
            "paused": True,
        },
    ).json()
    assert "only an ended experiment" in failed(master.cli("experiment", "continue", asha["id"]))
    ok(master.cli("experiment", "kill", asha["id"]))
    message = failed(master.cli("experiment", "continue", asha["id"]))
    assert "async_halving" in message and "fork" in message


def test_continue_resumes_the_errored_trials_only(master, made):
    exp = {"id": made["grid"]}
    done = master.wait(exp["id"])
    states = {t["hparams"]["crash_at"]: t for t in done["trials"]}
    assert states[3]["state"] == "ERRORED" and states[0]["state"] == "COMPLETED"
    before = records(master, exp["id"])

    ok(master.cli("experiment", "continue", exp["id"]))
    again = master.wait(exp["id"])
    assert again["state"] == "COMPLETED"
    by_crash = {t["hparams"]["crash_at"]: t for t in again["trials"]}
    assert by_crash[3]["state"] == "COMPLETED" and by_crash[3]["steps_completed"] == 4
    assert by_crash[3]["restarts"] == 0 and by_crash[3]["run_id"] == 2
    assert "resumed from step 2" in master.logs(by_crash[3]["id"])
    assert by_crash[0]["run_id"] == 1  # the completed one did not run again
    after = records(master, exp["id"])
    for key, points in before["points"].items():
        assert after["points"][key][: len(points)] == points


def test_continue_adds_trials_to_a_random_search(master, made):
    exp = {"id": made["random"]}
    master.wait(exp["id"])
    before = records(master, exp["id"])
    ok(master.cli("experiment", "continue", exp["id"], "--max-trials", "2"))
    done = master.wait(exp["id"])
    assert done["state"] == "COMPLETED" and done["num_trials"] == 2
    after = records(master, exp["id"])
    [first] = before["trials"]
    assert after["trials"][first] == before["trials"][first]
    assert master.trial(first)["run_id"] == 1
    assert after["config"]["searcher"]["max_trials"] == 2


# -- fork -------------------------------------------------------------------------------------


def test_fork_makes_a_new_experiment_and_leaves_the_original(master, single, configs):
    master.wait(single)
    before = records(master, single)
    original = master.experiment(single)
    partial = write(configs, "partial.yaml", "searcher: {max_length: 3}\ndescription: forked\n")
    result = master.cli(
        "experiment", "fork", single, "--config-file", partial,
        "--config", "hyperparameters.x=0.75", "--config", "name=ec-forked",
    )  # fmt: skip
    fork_id = created_id(result)
    assert f"(forked from {single})" in result.stdout
    fork = master.wait(master.experiment(fork_id)["id"])
    assert fork["state"] == "COMPLETED" and fork["name"] == "ec-forked"
    assert fork["description"] == "forked"
    assert fork["context_id"] == original["context_id"]  # the same code snapshot
    assert fork["forked_from"] == single and original["forked_from"] is None
    assert re.search(
        rf"Forked from\s+{single}", ok(master.cli("experiment", "describe", fork_id)).stdout
    )
    assert fork["config"]["searcher"]["max_length"] == 3
    assert fork["config"]["hyperparameters"]["x"]["val"] == 0.75
    assert fork["trials"][0]["steps_completed"] == 3
    assert records(master, single) == before  # nothing of the original changed

    message = failed(master.cli("experiment", "fork", single, "--config", "searcher.metric="))
    assert "searcher.metric" in message
    assert "does not exist" in failed(master.cli("experiment", "fork", 99999))


# -- set, list --------------------------------------------------------------------------------


def test_set_name_description_labels_and_list_filters(master, single):
    ok(master.cli("experiment", "set", "name", single, "renamed-single"))
    ok(master.cli("experiment", "set", "description", single, "the first one"))
    out = ok(
        master.cli("experiment", "set", "labels", single, "--add", "keep", "--add", "best")
    ).stdout
    assert out == f"Experiment {single} has labels: keep, best\n"
    ok(master.cli("experiment", "set", "labels", single, "--remove", "best", "--add", "keep"))
    exp = master.experiment(single)
    assert (exp["name"], exp["description"], exp["labels"]) == (
        "renamed-single",
        "the first one",
        ["keep"],
    )
    assert "give --add" in master.cli("experiment", "set", "labels", single).stderr

    listed = json.loads(ok(master.cli("experiment", "list", "--label", "keep", "--json")).stdout)
    assert [e["id"] for e in listed] == [single]
    listed = json.loads(ok(master.cli("experiment", "list", "--name", "RENAMED", "--json")).stdout)
    assert [e["id"] for e in listed] == [single]
    assert "match" in ok(master.cli("experiment", "list", "--user", "nobody-here")).stdout
    mine = json.loads(
        ok(master.cli("experiment", "list", "--user", master.username, "--json")).stdout
    )
    total = len(mine)
    assert total >= 3

    page = ok(master.cli("experiment", "list", "--limit", "2")).stdout
    assert f"Experiments 1-2 of {total}; {total - 2} more: --offset 2 --limit 2" in page
    second = json.loads(
        ok(master.cli("experiment", "list", "--limit", "2", "--offset", "2", "--json")).stdout
    )
    assert [e["id"] for e in second] == [e["id"] for e in mine[2:4]]
    csv = ok(master.cli("experiment", "list", "--label", "keep", "--csv")).stdout.splitlines()
    assert csv[0].startswith("ID,Name") and csv[1].startswith(f"{single},renamed-single")


# -- delete -----------------------------------------------------------------------------------


def test_delete_asks_then_removes_the_experiment_and_its_checkpoints(master, made, single):
    exp = master.wait(made["doomed"])
    ckpts = master.http.get(f"/experiments/{exp['id']}/checkpoints").json()
    assert ckpts
    paths = [Path(c["storage_path"]) for c in ckpts]
    assert all(p.exists() for p in paths)
    others = master.http.get(f"/experiments/{single}/checkpoints").json()

    env = {**os.environ, "COLUMNS": "200"}
    no = run_cli("--master", master.url, "experiment", "delete", exp["id"], stdin="n\n", env=env)
    assert no.returncode == 1 and "Nothing deleted" in no.stderr
    assert master.http.get(f"/experiments/{exp['id']}").status_code == 200

    out = ok(master.cli("experiment", "delete", exp["id"], "--yes")).stdout
    assert out == f"Deleted experiment {exp['id']} and its {len(ckpts)} checkpoints\n"
    assert master.http.get(f"/experiments/{exp['id']}").status_code == 404
    for trial in exp["trials"]:
        assert master.http.get(f"/trials/{trial['id']}").status_code == 404
    assert not any(p.exists() for p in paths)
    assert master.http.get(f"/experiments/{single}/checkpoints").json() == others
    assert all(Path(c["storage_path"]).exists() for c in others)
    assert "does not exist" in failed(master.cli("experiment", "delete", exp["id"], "--yes"))
    [audited] = [
        e
        for e in master.http.get("/audit", params={"limit": 50}).json()
        if e["action"] == "experiment.delete" and e["target"] == f"experiment:{exp['id']}"
    ]
    assert audited["actor"] == master.username and audited["detail"]["name"] == "ec-doomed"
    assert audited["detail"]["checkpoints"] == len(ckpts)


def test_delete_refuses_a_live_experiment(master):
    made = master.http.post(
        "/experiments",
        json={"config_yaml": SINGLE, "context_id": master.upload(CODE), "paused": True},
    )
    assert made.status_code == 201, made.text
    exp_id = made.json()["id"]
    assert "kill it first" in failed(master.cli("experiment", "delete", exp_id, "--yes"))
    ok(master.cli("experiment", "kill", exp_id))
    ok(master.cli("experiment", "delete", exp_id, "--yes"))


# -- the SDK ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sy(master):
    with Shipyard(master.url) as client:
        yield client


def test_sdk_create_with_overrides(master, sy, configs):
    config = write(configs, "sdk.yaml", SINGLE)
    exp = sy.create_experiment(
        config, CODE, overrides={"name": "ec-sdk-created", "searcher.max_length": 2}, paused=True
    )
    assert (exp.name, exp.state, exp.config["searcher"]["max_length"]) == (
        "ec-sdk-created",
        "PAUSED",
        2,
    )
    sy.kill(exp.id)


def test_sdk_experiment_and_trial_objects(master, sy, made):
    exp = sy.get_experiment(made["sdk"])
    assert exp.wait(timeout=120) is exp and exp.state == "COMPLETED"

    trials = exp.list_trials(sort_by="best_validation", order="asc")
    assert [t.hparams["x"] for t in trials] == [0.1, 0.9]  # smaller val_loss first
    assert [t.hparams["x"] for t in exp.list_trials(sort_by="best_validation", order="desc")] == [
        0.9,
        0.1,
    ]
    assert [t.id for t in exp.list_trials()] == sorted(t.id for t in trials)
    with pytest.raises(InvalidRequest, match="sort_by"):
        exp.list_trials(sort_by="nope")

    best = exp.top_checkpoint()
    assert best is not None and best.trial_id == trials[0].id and best.steps_completed == 4
    by_accuracy = exp.top_checkpoint(sort_by="accuracy", smaller_is_better=False)
    assert by_accuracy.trial_id == trials[0].id and by_accuracy.steps_completed == 4
    worst_trial_best = trials[1].top_checkpoint()
    assert worst_trial_best.trial_id == trials[1].id and worst_trial_best.steps_completed == 4
    assert sy.trial(trials[1].id).top_checkpoint() == worst_trial_best
    assert sy.get_trial(trials[0].id).top_checkpoint(sort_by="accuracy").steps_completed == 2

    frame = exp.to_dataframe()
    assert list(frame["trial_id"]) == [t.id for t in exp.list_trials()]
    assert {"hparams.x", "validation.val_loss", "validation.val_loss.best", "training.loss"} <= set(
        frame.columns
    )
    assert sorted(frame["hparams.x"]) == [0.1, 0.9]
    assert list(frame["steps_completed"]) == [4, 4]

    forked = sy.fork_experiment(exp.id, overrides={"searcher.max_length": 2}, paused=True)
    assert forked.state == "PAUSED" and forked.config["searcher"]["max_length"] == 2
    sy.kill(forked.id)
    sy.set_experiment(exp.id, add_labels=["sdk"])
    assert [e.id for e in sy.list_experiments(labels=["sdk"])] == [exp.id]
    page = sy.experiments_page(limit=1)
    assert page.total >= 2 and page.more == page.total - 1
    with pytest.raises(Conflict, match="nothing to continue"):
        sy.continue_experiment(exp.id)
    assert sy.delete_experiment(forked.id).id == forked.id


def test_who_may_fork_change_continue_and_delete(master, single):
    """Another editor sees the experiment and may fork it, but not change, continue or
    delete it (its owner's, or a workspace admin's, to do)."""
    other = master.as_user("ec-other-editor")
    forked = other.post(f"/experiments/{single}/fork", json={"paused": True})
    assert forked.status_code == 201, forked.text
    assert forked.json()["owner"] == "ec-other-editor"
    for method, path, body in [
        ("PATCH", f"/experiments/{single}", {"name": "stolen"}),
        ("POST", f"/experiments/{single}/continue", {"max_length": 9}),
        ("DELETE", f"/experiments/{single}", None),
    ]:
        r = other.request(method, path, json=body)
        assert r.status_code == 403, (path, r.text)
        assert "only its owner" in r.json()["error"]["message"]
    assert master.experiment(single)["name"] != "stolen"
    other.post(f"/experiments/{forked.json()['id']}/kill").raise_for_status()


def test_a_fork_keeps_literal_storage_keys_only_for_who_may_change_the_original(master, s3_server):
    """Literal S3 keys travel with a fork to its trials: another editor, who may see the
    experiment but not change it, must give keys of their own (`{secret: NAME}` ones are
    checked at submit as for any experiment); its owner may fork it as it is."""
    storage = {**s3_server.storage(s3_server.new_bucket(), "fork"), "save_trial_latest": 1}
    made = master.http.post(
        "/experiments",
        json={
            "config_yaml": SINGLE.replace(
                "checkpoint_storage: {save_trial_best: 100, save_trial_latest: 100}",
                f"checkpoint_storage: {json.dumps(storage)}",
            ),
            "context_id": master.upload(CODE),
            "paused": True,
        },
    )
    assert made.status_code == 201, made.text
    exp_id = made.json()["id"]
    other = master.as_user("ec-key-forker")
    forks = []

    refused = other.post(f"/experiments/{exp_id}/fork", json={"paused": True})
    assert refused.status_code == 403, refused.text
    message = refused.json()["error"]["message"]
    assert "literal secret_key" in message and "keys of your own" in message
    assert s3_server.secret_key not in refused.text
    changed_endpoint = other.post(
        f"/experiments/{exp_id}/fork",
        json={"paused": True, "overrides": {"checkpoint_storage.endpoint_url": "http://x.test"}},
    )
    assert changed_endpoint.status_code == 403, changed_endpoint.text

    for name, value in (
        ("FORK_ACCESS", s3_server.access_key),
        ("FORK_SECRET", s3_server.secret_key),
    ):
        r = master.http.put(f"/workspaces/Uncategorized/secrets/{name}", json={"value": value})
        assert r.status_code == 200, r.text
    own_keys = {
        "checkpoint_storage.access_key": {"secret": "FORK_ACCESS"},
        "checkpoint_storage.secret_key": {"secret": "FORK_SECRET"},
    }
    theirs = other.post(f"/experiments/{exp_id}/fork", json={"paused": True, "overrides": own_keys})
    assert theirs.status_code == 201, theirs.text
    assert theirs.json()["config"]["checkpoint_storage"]["secret_key"] == {"secret": "FORK_SECRET"}
    forks.append(theirs.json()["id"])

    mine = master.http.post(f"/experiments/{exp_id}/fork", json={"paused": True})
    assert mine.status_code == 201, mine.text
    forks.append(mine.json()["id"])
    for fork_id in [*forks, exp_id]:
        master.http.post(f"/experiments/{fork_id}/kill").raise_for_status()
