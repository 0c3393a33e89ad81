"""The model registry (issue 20) on one real master over HTTP, with one short experiment
submitted by the CLI from a git work tree: its trial checkpoints steps 1 and 2, waits at a
gate (the step-1 checkpoint is registered meanwhile), then checkpoints step 3 and ends;
retention keeps only the latest of its checkpoints, and the registered one. Aliases move,
versions do not; retention spares registered checkpoints; a model URI resolves to a local
directory; deleting a model an alias names asks first; who may see and do what."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from shipyard.client import Shipyard
from shipyard.client.model_uri import parse_model_ref, parse_model_uri
from shipyard.common.errors import InvalidRequest, NotFound
from tests.e2e.master import CODE, Master
from tests.e2e.test_run_records import git
from tests.e2e.test_sdk import REPO, python_blocks, run_snippet, snippet_env

MODEL = "digits"
CONFIG = """\
name: registry
entrypoint: python3 checkpoint_gate.py
hyperparameters:
  steps: 3
  ckpt_every: 1
  ckpt_bytes: 4096
  gate: {gate}
  gate_step: 3
searcher: {{name: single, metric: val_loss}}
checkpoint_storage: {{save_trial_latest: 1, save_trial_best: 0, save_experiment_best: 0}}
max_restarts: 0
"""


@pytest.fixture(scope="module")
def master(tmp_path_factory):
    m = Master(tmp_path_factory.mktemp("model_registry") / "home", slots=1).start()
    yield m
    m.stop()


def ok(result) -> str:
    assert result.returncode == 0, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    return result.stdout


def checkpoints_of(master: Master, exp_id: int) -> dict[int, dict]:
    """The experiment's checkpoints not deleted, by step."""
    listed = master.http.get(f"/experiments/{exp_id}/checkpoints").json()
    return {c["steps_completed"]: c for c in listed}


@pytest.fixture(scope="module")
def trained(master: Master, tmp_path_factory) -> dict:
    """Model `digits`: version 1 the step-1 checkpoint (registered while the trial waited at
    its gate), version 2 the step-3 one (its latest, registered once retention had run)."""
    repo = tmp_path_factory.mktemp("repo")
    shutil.copy(CODE / "checkpoint_gate.py", repo / "checkpoint_gate.py")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "first")
    gate = tmp_path_factory.mktemp("gate") / "open"
    config = tmp_path_factory.mktemp("config") / "config.yaml"
    config.write_text(CONFIG.format(gate=json.dumps(str(gate))))
    exp_id = json.loads(ok(master.cli("experiment", "create", config, repo, "--json")))["id"]
    early = master.wait_for(
        lambda: checkpoints_of(master, exp_id).get(2) and checkpoints_of(master, exp_id),
        what="the checkpoints of steps 1 and 2",
    )
    ok(master.cli("model", "create", MODEL, "--description", "digits classifier", "-t", "cv"))
    ok(master.cli("model", "register", MODEL, early[1]["uuid"], "-d", "the first"))
    Path(f"{gate}.1").touch()
    done = master.wait(exp_id)
    assert done["state"] == "COMPLETED", done
    # Retention runs at the master's housekeeping pass after the trial ends.
    kept = master.wait_for(
        lambda: set(checkpoints_of(master, exp_id)) == {1, 3} and checkpoints_of(master, exp_id),
        what="retention's pass",
    )
    ok(master.cli("model", "register", MODEL, kept[3]["uuid"], "--tag", "best"))
    return {
        "exp": exp_id,
        "trial": done["trials"][0]["id"],
        "v1": early[1],
        "v2": kept[3],
        "deleted": early[2],
        "commit": git(repo, "rev-parse", "HEAD"),
    }


def files_of(directory: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(directory)): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def test_aliases_move_and_versions_do_not(master, trained):
    ok(master.cli("model", "alias", MODEL, "production", "1"))
    model = master.http.get(f"/models/{MODEL}").json()
    assert [(v["version"], v["checkpoint_uuid"]) for v in model["versions"]] == [
        (1, trained["v1"]["uuid"]),
        (2, trained["v2"]["uuid"]),
    ]
    assert [(a["alias"], a["version"]) for a in model["aliases"]] == [("production", 1)]
    assert model["versions"][0]["aliases"] == ["production"]
    moved = json.loads(ok(master.cli("model", "alias", MODEL, "production", "2", "--json")))
    assert moved["version"] == 2
    resolved = master.http.get(f"/models/{MODEL}/resolve", params={"ref": "production"}).json()
    assert resolved["version"] == 2 and resolved["checkpoint_uuid"] == trained["v2"]["uuid"]
    # version 1 still names its checkpoint, and nothing changes that
    first = master.http.get(f"/models/{MODEL}/versions/1").json()
    assert first["checkpoint_uuid"] == trained["v1"]["uuid"] and first["aliases"] == []
    changed = master.http.patch(
        f"/models/{MODEL}/versions/1", json={"checkpoint_uuid": trained["v2"]["uuid"]}
    )
    assert changed.status_code == 400, changed.text
    assert "never changes" in changed.json()["error"]["details"][0]["message"]
    put = master.http.put(
        f"/models/{MODEL}/versions/1", json={"checkpoint_uuid": trained["v2"]["uuid"]}
    )
    assert put.status_code == 405
    described = master.http.patch(f"/models/{MODEL}/versions/1", json={"description": "v1!"})
    assert described.status_code == 200, described.text
    assert described.json()["checkpoint_uuid"] == trained["v1"]["uuid"]
    # an alias must not read as a version, and must name one that exists
    for alias, version, status in (("123", 1, 400), ("staging", 9, 404), ("ok-1", 0, 400)):
        r = master.http.put(f"/models/{MODEL}/aliases/{alias}", json={"version": version})
        assert r.status_code == status, (alias, r.text)
    bad = master.cli("model", "alias", MODEL, "7up", "1")
    assert bad.returncode == 1 and "a number would read as a version" in bad.stderr


def test_retention_spares_a_registered_checkpoint(master, trained):
    # step 2 went; step 1 (registered before retention ran) stays, files and row
    v1, gone = trained["v1"], trained["deleted"]
    assert master.http.get(f"/checkpoints/{gone['uuid']}").json()["state"] == "DELETED"
    assert not Path(gone["storage_path"]).exists()
    assert master.http.get(f"/checkpoints/{v1['uuid']}").json()["state"] == "COMPLETED"
    assert set(files_of(Path(v1["storage_path"]))) >= {"state.json", "weights.bin"}
    # deleting it, or its experiment, is refused, naming the model version
    refused = master.cli("checkpoint", "delete", v1["uuid"], "--yes")
    assert refused.returncode == 1, refused.stdout
    assert f"is model version {MODEL}/1" in refused.stderr
    r = master.http.delete(f"/checkpoints/{v1['uuid']}")
    assert r.status_code == 409 and f"{MODEL}/1" in r.json()["error"]["message"]
    r = master.http.delete(f"/experiments/{trained['exp']}")
    assert r.status_code == 409, r.text
    assert f"{MODEL}/1" in r.json()["error"]["message"]
    assert f"{MODEL}/2" in r.json()["error"]["message"]
    assert master.experiment(trained["exp"])["archived"] is False  # nothing was done
    assert Path(v1["storage_path"], "state.json").is_file()


def test_a_model_uri_resolves_to_a_local_directory(master, trained, tmp_path, monkeypatch):
    ok(master.cli("model", "alias", MODEL, "production", "2"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with Shipyard(master.url) as sy:
        path = sy.resolve_model(f"shipyard://models/{MODEL}@production")
        assert path == tmp_path / "cache/shipyard/models/Uncategorized" / MODEL / "2"
        assert files_of(path) == files_of(Path(trained["v2"]["storage_path"]))
        assert files_of(path)["weights.bin"] == b"w" * 4096
        # reused once complete: a file changed there is not downloaded again
        (path / "state.json").write_text("kept")
        assert sy.resolve_model(f"shipyard://models/{MODEL}/2?workspace=Uncategorized") == path
        assert (path / "state.json").read_text() == "kept"
        first = sy.resolve_model(f"shipyard://models/{MODEL}/1", dest=tmp_path / "v1")
        assert first == tmp_path / "v1"
        assert files_of(first) == files_of(Path(trained["v1"]["storage_path"]))
        for bad in (
            f"shipyard://models/{MODEL}",
            f"s3://models/{MODEL}/1",
            "shipyard://models/x@1",
        ):
            with pytest.raises(InvalidRequest, match="shipyard://models/NAME@ALIAS or "):
                sy.resolve_model(bad)
        with pytest.raises(NotFound, match="no alias 'canary'"):
            sy.resolve_model(f"shipyard://models/{MODEL}@canary")
        version = sy.get_model_version(f"{MODEL}@production")
        assert version.version == 2 and version.lineage.trial_id == trained["trial"]
    downloaded = master.cli("model", "download", f"{MODEL}/1", tmp_path / "cli", "--json")
    assert json.loads(ok(downloaded))["files"] == sorted(files_of(first))
    assert files_of(tmp_path / "cli") == files_of(first)


def test_the_docs_sdk_snippet_runs(master, trained, tmp_path):
    """docs/models.md's snippet as printed, `Shipyard()` finding the master through
    SHIPYARD_MASTER, its cache in a temporary directory."""
    [snippet] = python_blocks(REPO / "docs" / "models.md", "shipyard.client")
    ok(master.cli("model", "alias", MODEL, "production", "2"))
    env = snippet_env(SHIPYARD_MASTER=master.url, XDG_CACHE_HOME=str(tmp_path))
    result = run_snippet(snippet, env)
    assert result.returncode == 0, result.stderr
    files, version = result.stdout.splitlines()
    assert files == str(sorted(files_of(Path(trained["v2"]["storage_path"]))))
    assert version == f"2 {trained['trial']} {{'val_loss': {1 / 3}}}"
    assert (tmp_path / "shipyard/models/Uncategorized" / MODEL / "2" / "state.json").is_file()


def test_model_uris_parse_in_two_forms():
    assert parse_model_uri("shipyard://models/a.b-c@prod?workspace=team%20b") == parse_model_ref(
        "a.b-c@prod", "team b"
    )
    ref = parse_model_uri("shipyard://models/resnet/12")
    assert (ref.name, ref.version, ref.alias, ref.workspace) == ("resnet", 12, None, None)
    assert ref.uri() == "shipyard://models/resnet/12"
    assert parse_model_ref("resnet").ref is None  # the CLI's NAME: the latest version
    for bad in ("shipyard://models/resnet/0", "shipyard://models/resnet/1?user=x", "x/y/z"):
        with pytest.raises(InvalidRequest, match="NAME/VERSION"):
            parse_model_ref(bad)


def test_lineage_names_the_trial_experiment_commit_and_metrics(master, trained):
    shown = ok(master.cli("model", "describe", f"{MODEL}/1"))
    assert f"{trained['trial']} (run 1)" in shown
    assert f"registry ({trained['exp']})" in shown
    assert trained["commit"] in shown
    assert "val_loss=1" in shown  # its step-1 validation: 1 / 1
    version = json.loads(ok(master.cli("model", "describe", f"{MODEL}/1", "--json")))["version"]
    lineage = version["lineage"]
    assert lineage["code"]["commit"] == trained["commit"] and lineage["code"]["dirty"] is False
    assert lineage["validation_metrics"] == {"val_loss": 1.0}
    assert lineage["checkpoint"]["steps_completed"] == 1 and lineage["run_id"] == 1
    assert lineage["environment"]["python"] and lineage["environment"]["packages"] > 0
    assert lineage["hyperparameters"]["ckpt_every"] == 1
    latest = json.loads(ok(master.cli("model", "describe", MODEL, "--json")))
    assert latest["version"]["version"] == 2
    assert latest["version"]["lineage"]["validation_metrics"] == {"val_loss": pytest.approx(1 / 3)}
    listed = ok(master.cli("model", "list", "--csv")).splitlines()
    assert listed[0].startswith("Name,Workspace,Versions,Latest,Aliases")
    assert any(line.startswith(f"{MODEL},Uncategorized,2,2,") for line in listed[1:])


def test_registering_refuses_what_cannot_be_a_version(master, trained):
    def register(uuid: str, model: str = MODEL):
        return master.http.post(f"/models/{model}/versions", json={"checkpoint_uuid": uuid})

    r = register(trained["deleted"]["uuid"])  # retention deleted it
    assert r.status_code == 409 and "is DELETED" in r.json()["error"]["message"], r.text
    r = register("no-such-checkpoint")
    assert r.status_code == 404 and r.json()["error"]["details"][0]["path"] == "checkpoint_uuid"
    r = register(trained["v1"]["uuid"])
    assert r.status_code == 409 and "already version 1" in r.json()["error"]["message"]
    assert master.http.post("/models", json={"name": MODEL}).status_code == 409
    assert master.http.post("/models", json={"name": "-dash"}).status_code == 400
    assert master.http.get("/models/bad name").status_code == 400
    # an archived model takes no version until unarchived; lists hide it
    ok(master.cli("model", "create", "frozen"))
    ok(master.cli("model", "archive", "frozen"))
    r = register(trained["v1"]["uuid"], "frozen")
    assert r.status_code == 409 and "archived" in r.json()["error"]["message"]
    assert "frozen" not in ok(master.cli("model", "list"))
    assert "frozen (archived)" in ok(master.cli("model", "list", "--all"))
    ok(master.cli("model", "unarchive", "frozen"))
    assert register(trained["v1"]["uuid"], "frozen").status_code == 201


def test_deleting_a_model_an_alias_names_asks_first(master, trained):
    ok(master.cli("model", "create", "doomed"))
    ok(master.cli("model", "register", "doomed", trained["v2"]["uuid"]))
    ok(master.cli("model", "alias", "doomed", "production", "1"))
    asked = master.cli("model", "delete", "doomed")  # no answer on stdin: a no
    assert asked.returncode == 1
    assert "Aliases name its versions (production → version 1)" in asked.stderr
    assert "Nothing deleted" in asked.stderr
    assert master.http.get("/models/doomed").status_code == 200
    r = master.http.delete("/models/doomed")
    assert r.status_code == 409 and "production" in r.json()["error"]["message"]
    deleted = json.loads(ok(master.cli("model", "delete", "doomed", "--yes", "--json")))
    assert deleted == {
        "name": "doomed",
        "workspace": "Uncategorized",
        "versions": 1,
        "aliases": ["production"],
    }
    assert master.http.get("/models/doomed").status_code == 404
    # its checkpoint is still digits' version 2
    assert master.http.get(f"/checkpoints/{trained['v2']['uuid']}").json()["state"] == "COMPLETED"
    events = master.http.get("/audit").json()
    assert any(e["action"] == "model.delete" and e["detail"]["name"] == "doomed" for e in events)


def _only_role(master: Master, username: str, role: str, workspace: str):
    """A user holding `role` in `workspace` and nothing in the default one."""
    client = master.as_user(username)
    for b in master.http.get("/roles").json():
        if b["user"] == username:
            assert master.http.delete(f"/roles/{b['id']}").status_code == 204
    r = master.http.post("/roles", json={"role": role, "user": username, "workspace": workspace})
    assert r.status_code == 201, r.text
    return client


def test_a_viewer_may_not_register_and_another_workspace_sees_nothing(master, trained):
    uuid = trained["v2"]["uuid"]
    viewer = _only_role(master, "vera", "viewer", "Uncategorized")
    assert viewer.get(f"/models/{MODEL}").status_code == 200
    r = viewer.post(f"/models/{MODEL}/versions", json={"checkpoint_uuid": uuid})
    assert r.status_code == 403 and "editor" in r.json()["error"]["message"], r.text
    assert viewer.put(f"/models/{MODEL}/aliases/production", json={"version": 1}).status_code == 403
    assert viewer.post("/models", json={"name": "mine"}).status_code == 403
    assert master.http.post("/workspaces", json={"name": "elsewhere"}).status_code == 201
    other = _only_role(master, "otto", "editor", "elsewhere")
    for path in (f"/models/{MODEL}", f"/models/{MODEL}/versions/1", f"/models/{MODEL}/resolve"):
        assert other.get(path).status_code == 404, path
    assert other.get(f"/models/{MODEL}", params={"workspace": "Uncategorized"}).status_code == 404
    assert other.get("/models").json() == []
    made = other.post("/models", json={"name": MODEL, "workspace": "elsewhere"})
    assert made.status_code == 201, made.text  # the same name, in another workspace
    r = other.post(f"/models/{MODEL}/versions", json={"checkpoint_uuid": uuid})
    assert r.status_code == 404, r.text  # a checkpoint otto does not see
    # the admin sees both: a name in two workspaces must be given its workspace
    r = master.http.get(f"/models/{MODEL}")
    assert r.status_code == 400 and "elsewhere" in r.json()["error"]["message"]
    r = master.http.post(
        f"/models/{MODEL}/versions",
        params={"workspace": "elsewhere"},
        json={"checkpoint_uuid": uuid},
    )
    assert r.status_code == 400 and "its own workspace" in r.json()["error"]["message"]
    mine = master.http.get(f"/models/{MODEL}", params={"workspace": "Uncategorized"})
    assert mine.status_code == 200 and mine.json()["num_versions"] == 2


def test_a_version_is_deleted_with_its_aliases_and_its_number_is_not_given_again(master, trained):
    v1, v2 = trained["v1"]["uuid"], trained["v2"]["uuid"]
    ok(master.cli("model", "create", "pruned"))
    ok(master.cli("model", "register", "pruned", v1))
    ok(master.cli("model", "register", "pruned", v2))
    ok(master.cli("model", "alias", "pruned", "production", "2"))
    asked = master.cli("model", "delete-version", "pruned", "2")  # no answer on stdin: a no
    assert asked.returncode == 1
    assert "Aliases name it (production)" in asked.stderr and v2 in asked.stderr
    assert master.http.get("/models/pruned/versions/2").status_code == 200
    r = master.http.delete("/models/pruned/versions/2")
    assert r.status_code == 409 and "production" in r.json()["error"]["message"]
    walt = _only_role(master, "walt", "viewer", "Uncategorized")
    r = walt.delete("/models/pruned/versions/1")
    assert r.status_code == 403 and "owner" in r.json()["error"]["message"], r.text

    deleted = json.loads(ok(master.cli("model", "delete-version", "pruned", "2", "-y", "--json")))
    assert deleted == {
        "name": "pruned",
        "workspace": "Uncategorized",
        "version": 2,
        "checkpoint_uuid": v2,
        "aliases": ["production"],
    }
    assert master.http.get("/models/pruned/versions/2").status_code == 404
    r = master.http.get("/models/pruned/resolve", params={"ref": "production"})
    assert r.status_code == 404
    latest = master.http.get("/models/pruned/resolve").json()
    assert (latest["version"], latest["checkpoint_uuid"]) == (1, v1)
    # registered again, the checkpoint is version 3: "pruned/2" never names another one
    again = json.loads(ok(master.cli("model", "register", "pruned", v2, "--json")))
    assert again["version"] == 3
    assert master.http.delete("/models/pruned/versions/1").status_code == 200
    model = master.http.get("/models/pruned").json()
    assert [v["version"] for v in model["versions"]] == [3] and model["aliases"] == []
    # the checkpoints stay (digits still has both as versions)
    for uuid in (v1, v2):
        assert master.http.get(f"/checkpoints/{uuid}").json()["state"] == "COMPLETED"
    events = [e for e in master.http.get("/audit").json() if e["action"] == "model.delete_version"]
    assert sorted(e["detail"]["version"] for e in events) == [1, 2]
