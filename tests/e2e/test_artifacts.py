"""Artifacts (ctx.artifacts) on a real master with real trials: a trial logs a PNG at steps 1
and 2, a table, a text, a binary file, an HTML page and an SVG drawing; the master lists them
and serves each byte for byte (sha256 checked), the CLI and the SDK download them, a user of
another workspace gets 404, HTML and SVG come as downloads (never shown in place), a bad
name or a file over the limit fails in the trial with a clear error and the master refuses
bad records with a 400 naming the field, and deleting the experiment removes the files."""

from __future__ import annotations

import csv
import hashlib
import io
import json

import pytest

from shipyard.client.sdk import Shipyard
from tests.e2e.master import CODE, Master
from tests.e2e.trial_code.artifacts_trial import BINARY, HTML, SVG, TEXT, png

GOOD = """
name: artifacts
entrypoint: python3 artifacts_trial.py
hyperparameters: {mode: good}
searcher: {name: single, metric: val_loss}
max_restarts: 0
"""
REFUSED = """
name: artifacts-refused
entrypoint: python3 artifacts_trial.py
hyperparameters: {mode: refused}
searcher: {name: single, metric: val_loss}
environment: {environment_variables: [SHIPYARD_ARTIFACT_MAX_BYTES=1000]}
max_restarts: 0
"""


@pytest.fixture(scope="module")
def master(tmp_path_factory):
    m = Master(tmp_path_factory.mktemp("artifacts") / "home", slots=2).start()
    yield m
    m.stop()


@pytest.fixture(scope="module")
def runs(master: Master) -> dict:
    """Both experiments, run at once to their end: {"good": trial, "refused": trial}."""
    good, refused = master.create(GOOD, CODE), master.create(REFUSED, CODE)
    found = {}
    for key, exp, state in (("good", good, "COMPLETED"), ("refused", refused, "ERRORED")):
        done = master.wait(exp["id"], timeout=90)
        trial = master.trial(done["trials"][0]["id"])
        assert done["state"] == state, (trial, master.logs(trial["id"]))
        found[key] = trial
    return found


def listed(master: Master, trial_id: int) -> dict[tuple[str, int | None], dict]:
    r = master.http.get(f"/trials/{trial_id}/artifacts")
    assert r.status_code == 200, r.text
    return {(a["name"], a["steps_completed"]): a for a in r.json()}


def content(master: Master, artifact: dict):
    r = master.http.get(artifact["url"].removeprefix("/api/v1"))
    assert r.status_code == 200, r.text
    return r


EXPECTED = {
    ("samples.png", 1): ("image", "image/png", png(1)),
    ("samples.png", 2): ("image", "image/png", png(2)),
    ("predictions", 2): ("table", "application/json", None),  # JSON, compared decoded
    ("notes", None): ("text", "text/plain", TEXT.encode()),
    ("weights.bin", None): ("file", "application/octet-stream", BINARY),
    ("page.html", None): ("file", "text/html", HTML.encode()),
    ("drawing.svg", None): ("file", "image/svg+xml", SVG.encode()),
}


def test_every_artifact_is_listed_and_read_back_byte_for_byte(master, runs):
    trial = runs["good"]
    found = listed(master, trial["id"])
    assert set(found) == set(EXPECTED)
    # those of no step first, then by step and name
    order = [(a["name"], a["steps_completed"]) for a in found.values()]
    assert order[:4] == sorted(k for k in EXPECTED if k[1] is None)
    assert order[4:] == [("samples.png", 1), ("predictions", 2), ("samples.png", 2)]
    for key, (kind, media_type, expected) in EXPECTED.items():
        artifact = found[key]
        assert (artifact["kind"], artifact["media_type"]) == (kind, media_type), key
        assert artifact["run_id"] == 1 and artifact["trial_id"] == trial["id"]
        assert artifact["experiment_id"] == trial["experiment_id"]
        step = "none" if key[1] is None else key[1]
        assert artifact["storage_path"] == f"artifacts/trial-{trial['id']}/{step}/{key[0]}"
        r = content(master, artifact)
        assert hashlib.sha256(r.content).hexdigest() == artifact["sha256"]
        assert len(r.content) == artifact["size"]
        assert r.headers["x-content-type-options"] == "nosniff"
        assert r.headers["content-type"].split(";")[0] == media_type
        if expected is not None:
            assert r.content == expected, key
    table = json.loads(content(master, found[("predictions", 2)]).content)
    assert table == {
        "columns": ["epoch", "accuracy", "label"],
        "rows": [[1, 0.5, "cat"], [2, 0.75, None]],
    }
    # the files are in the experiment's checkpoint storage, where the trial wrote them
    stored = [p for p in master.home.rglob(f"artifacts/trial-{trial['id']}/*/*") if p.is_file()]
    assert sorted(p.name for p in stored) == sorted(k[0] for k in EXPECTED)


def test_images_and_texts_show_in_place_html_and_svg_are_downloads(master, runs):
    found = listed(master, runs["good"]["id"])
    for key in (("samples.png", 1), ("notes", None), ("predictions", 2)):
        r = content(master, found[key])
        assert r.headers["content-disposition"] == f'inline; filename="{key[0]}"'
    for key in (("page.html", None), ("drawing.svg", None), ("weights.bin", None)):
        r = content(master, found[key])
        assert r.headers["content-disposition"] == f'attachment; filename="{key[0]}"'
        assert r.headers["content-security-policy"] == "sandbox"
    # the sha256 is its ETag: a browser that has it is answered 304
    image = found[("samples.png", 2)]
    r = master.http.get(image["url"].removeprefix("/api/v1"))
    again = master.http.get(
        image["url"].removeprefix("/api/v1"), headers={"If-None-Match": r.headers["etag"]}
    )
    assert r.headers["etag"] == f'"{image["sha256"]}"'
    assert again.status_code == 304 and again.content == b""


def test_the_cli_and_the_sdk_list_and_download_them(master, runs, tmp_path):
    trial_id = runs["good"]["id"]
    r = master.cli("trial", "artifacts", trial_id, "--json")
    assert r.returncode == 0, r.stderr
    by_name = {(a["name"], a["steps_completed"]): a for a in json.loads(r.stdout)}
    assert set(by_name) == set(EXPECTED)
    r = master.cli("trial", "artifacts", trial_id, "--csv")
    assert r.returncode == 0, r.stderr
    rows = list(csv.reader(io.StringIO(r.stdout)))
    assert rows[0][:5] == ["ID", "Name", "Step", "Kind", "Media type"]
    assert ["samples.png", "2", "image", "image/png"] in [row[1:5] for row in rows[1:]]
    r = master.cli("trial", "artifacts", trial_id)
    assert r.returncode == 0 and "weights.bin" in r.stdout, r.stderr

    weights = by_name[("weights.bin", None)]
    r = master.cli("trial", "artifact-download", trial_id, weights["id"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "weights.bin").read_bytes() == BINARY
    assert str(tmp_path / "weights.bin") in r.stdout

    with Shipyard(master.url) as sdk:
        assert {a.id for a in sdk.trial_artifacts(trial_id)} == {a["id"] for a in by_name.values()}
        image = by_name[("samples.png", 1)]
        written = sdk.download_artifact(trial_id, image["id"], tmp_path / "first.png")
        assert written.read_bytes() == png(1)

    r = master.cli("trial", "artifact-download", trial_id, 999999)
    assert r.returncode == 1 and f"trial {trial_id} has no artifact 999999" in r.stderr


def test_a_bad_name_or_a_file_over_the_limit_is_refused_in_the_trial(master, runs):
    trial = runs["refused"]
    logs = "\n".join(master.logs(trial["id"]))
    assert "refused: artifact name 'bad/name' is not valid" in logs
    reason = trial["runs"][0]["ended_how"]
    assert "ValueError: artifact 'big.bin' is 2000 bytes, over the limit of 1000" in reason
    assert "SHIPYARD_ARTIFACT_MAX_BYTES" in reason
    assert listed(master, trial["id"]) == {}


def test_the_master_refuses_a_bad_record_naming_the_field(master, runs):
    trial = runs["good"]
    task = master.task_http(trial["id"], 1)
    good = {
        "run_id": 1,
        "name": "x.png",
        "steps_completed": 3,
        "kind": "image",
        "media_type": "image/png",
        "size": 10,
        "sha256": "0" * 64,
        "storage_path": f"artifacts/trial-{trial['id']}/3/x.png",
    }
    refusals = {
        "name": ({"name": "../x"}, "artifact name '../x' is not valid"),
        "kind": ({"kind": "video"}, "artifact kind must be one of"),
        "media": ({"media_type": "image/svg+xml"}, "must be image/png or image/jpeg"),
        "size": ({"size": 2**40}, "over the master's limit"),
        "sha": ({"sha256": "abc"}, "sha256 must be 64 lower-case hex digits"),
        "steps": ({"steps_completed": -1}, "steps_completed must be None or an int >= 0"),
        # another file of the storage (another experiment's checkpoint) is never served
        "path": ({"storage_path": "0000/model.bin"}, "storage_path must be"),
    }
    for what, (change, message) in refusals.items():
        r = task.post(f"/trials/{trial['id']}/artifacts", json={**good, **change})
        assert r.status_code == 400, (what, r.text)
        assert message in r.json()["error"]["message"], (what, r.text)
    # a well-formed record of a trial that has ended: a conflict, not stored
    r = task.post(f"/trials/{trial['id']}/artifacts", json=good)
    assert r.status_code == 409, r.text
    # another trial's token, or none
    other = master.task_http(runs["refused"]["id"], 1)
    assert other.post(f"/trials/{trial['id']}/artifacts", json=good).status_code == 403
    assert master._client().post(f"/trials/{trial['id']}/artifacts", json=good).status_code == 401


def test_a_user_of_another_workspace_gets_404(master, runs):
    assert master.http.post("/workspaces", json={"name": "elsewhere"}).status_code == 201
    eve = master.as_user("eve")
    r = master.http.post("/roles", json={"role": "editor", "user": "eve", "workspace": "elsewhere"})
    assert r.status_code == 201, r.text
    for b in master.http.get("/roles", params={"workspace": "Uncategorized"}).json():
        if b["user"] == "eve":  # out of the default workspace, where the trials are
            assert master.http.delete(f"/roles/{b['id']}").status_code == 204
    trial_id = runs["good"]["id"]
    artifact = next(iter(listed(master, trial_id).values()))
    for path in (f"/trials/{trial_id}/artifacts", artifact["url"].removeprefix("/api/v1")):
        r = eve.get(path)
        assert r.status_code == 404, (path, r.text)
        assert r.json()["error"]["type"] == "NotFound"
        assert master._client().get(path).status_code == 401  # and no one without a token
    # an artifact id of another trial is not found through this one
    r = master.http.get(f"/trials/{runs['refused']['id']}/artifacts/{artifact['id']}/content")
    assert r.status_code == 404


def test_deleting_the_experiment_removes_its_artifacts(master, runs):
    trial = runs["good"]
    files = master.home.rglob(f"artifacts/trial-{trial['id']}")
    [folder] = [p for p in files if p.is_dir()]
    assert any(folder.rglob("*"))
    r = master.http.delete(f"/experiments/{trial['experiment_id']}")
    assert r.status_code == 200, r.text
    assert not folder.exists()
    assert master.http.get(f"/trials/{trial['id']}/artifacts").status_code == 404
