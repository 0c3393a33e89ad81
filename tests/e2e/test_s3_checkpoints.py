"""Checkpoints in S3 (a real SeaweedFS server, tests/fixtures/s3.py): trials write them,
resume from them, the master's retention deletes their objects and its download reads them,
with keys written in the config or taken from workspace secrets; a storage the master
cannot use is refused at submit with the field at fault; the secret_key (and a key from a
secret) never appears in an API answer, and is masked in the trial's output."""

from __future__ import annotations

import io
import sqlite3
import tarfile
from pathlib import Path

import httpx
import pytest
import yaml

from tests.fixtures import procs
from tests.fixtures.poll import poll

CODE = Path(__file__).parent / "trial_code"
PREFIX = "team-a/checkpoints"
WORKSPACE = "Uncategorized"  # the workspace of a config that names none
# A trial that prints its storage spec, then its keys on their own, then trains (steps.py).
PRINTS_KEYS = [
    "sh",
    "-c",
    'echo "spec $SHIPYARD_CHECKPOINT_STORAGE" && python3 -c \'import json, os; '
    's = json.loads(os.environ["SHIPYARD_CHECKPOINT_STORAGE"]); '
    'print("keys", s["access_key"], s["secret_key"])\' && exec python3 steps.py',
]


def config(storage: dict, hparams: str, **extra) -> str:
    return yaml.safe_dump(
        {
            "name": "s3",
            "entrypoint": extra.pop("entrypoint", "python3 steps.py"),
            "hyperparameters": yaml.safe_load(hparams),
            "searcher": {"name": "single", "metric": "val_loss"},
            "checkpoint_storage": storage,
            **extra,
        }
    )


def manifests(s3_server, bucket: str) -> list[str]:
    """The uuids of the complete checkpoints in the bucket, from its own listing."""
    listed = s3_server.client().list_objects_v2(Bucket=bucket, Prefix=PREFIX + "/")
    keys = [item["Key"] for item in listed.get("Contents", [])]
    return sorted(k.split("/")[-2] for k in keys if k.endswith("/metadata.json"))


def set_secret(master, name: str, value: str) -> None:
    r = master.http.put(f"/workspaces/{WORKSPACE}/secrets/{name}", json={"value": value})
    assert r.status_code == 200, r.text


def refused(r: httpx.Response, field: str) -> str:
    """The message of a 422 at submit about `field`."""
    assert r.status_code == 422, r.text
    details = {d["path"]: d["message"] for d in r.json()["error"]["details"]}
    assert list(details) == [field], details
    return details[field]


def test_keys_from_workspace_secrets_write_retain_and_download_and_are_never_shown(
    master, s3_server, s3_bucket, tmp_path, monkeypatch
):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    keys = {"access_key": {"secret": "S3_ACCESS"}, "secret_key": {"secret": "S3_SECRET"}}
    storage = {**s3_server.storage(s3_bucket, PREFIX), **keys, "save_trial_latest": 2}
    submitted = config(storage, "{steps: 10, ckpt_every: 2, x: 0.5}", entrypoint=PRINTS_KEYS)

    # Refused at submit, nothing stored: a secret the workspace lacks, then keys the
    # bucket refuses (the master checks with the secrets' current values).
    set_secret(master, "S3_SECRET", "not-the-secret-key-000")
    missing = refused(master.post_experiment(submitted, CODE), "checkpoint_storage.access_key")
    assert "no secret 'S3_ACCESS' in workspace 'Uncategorized'" in missing
    set_secret(master, "S3_ACCESS", s3_server.access_key)
    wrong = refused(master.post_experiment(submitted, CODE), "checkpoint_storage.access_key")
    assert "secret_key" in wrong and "not-the-secret-key" not in wrong
    assert master.http.get("/experiments").json() == []
    set_secret(master, "S3_SECRET", s3_server.secret_key)

    done = master.wait(master.create(submitted, CODE)["id"])
    assert done["state"] == "COMPLETED"

    def kept_steps():
        # Retention marks a checkpoint DELETED before its files go (so that it cannot be
        # registered meanwhile): the list changes first, then the bucket.
        kept = master.http.get(f"/experiments/{done['id']}/checkpoints").json()
        steps = sorted(c["steps_completed"] for c in kept)
        gone = len(manifests(s3_server, s3_bucket)) == len(kept)
        return kept if steps == [8, 10] and gone else None

    kept = master.wait_for(kept_steps, timeout=30, what="checkpoints 2, 4, 6 deleted")
    assert manifests(s3_server, s3_bucket) == sorted(c["uuid"] for c in kept)
    every_key = [
        item["Key"]
        for item in s3_server.client().list_objects_v2(Bucket=s3_bucket).get("Contents", [])
    ]
    deleted_left_nothing = {  # not the writing marks, nor the trials' TensorBoard files
        k.split("/")[2] for k in every_key if k.split("/")[2][0] != "." and "/tensorboard/" not in k
    }
    assert deleted_left_nothing == {c["uuid"] for c in kept}
    assert all(c["storage_path"].startswith(f"s3://{s3_bucket}/{PREFIX}/") for c in kept)

    # The master reads the files back for a download (the user holds no S3 key).
    latest = max(kept, key=lambda c: c["steps_completed"])
    r = master.http.get(f"/checkpoints/{latest['uuid']}/download")
    assert r.status_code == 200, r.text
    with tarfile.open(fileobj=io.BytesIO(r.content)) as tar:
        names = tar.getnames()
        state = tar.extractfile(next(n for n in names if n.endswith("state.json")))
        assert state is not None and b'"step": 10' in state.read()

    # A user downloads straight from the bucket through URLs the master signs, with no S3
    # credentials of their own (the CLI, with nothing of AWS in its environment).
    links = master.http.get(f"/checkpoints/{latest['uuid']}/links").json()
    assert links["direct"] and 0 < links["expires_in_s"] <= 3600
    assert {f["path"] for f in links["files"]} == {"state.json", "metadata.json"}
    assert all(f["url"].startswith(s3_server.endpoint_url) for f in links["files"])
    plain = httpx.get(next(f["url"] for f in links["files"] if f["path"] == "state.json"))
    assert plain.status_code == 200 and b'"step": 10' in plain.content
    dest = tmp_path / "downloaded"
    out = master.cli("checkpoint", "download", latest["uuid"], dest)
    assert out.returncode == 0, out.stderr
    assert b'"step": 10' in (dest / "state.json").read_bytes()
    assert (dest / "metadata.json").exists()
    assert sorted(p.name for p in dest.iterdir()) == ["metadata.json", "state.json"]

    # The config shows the secrets' names; no answer shows their values (a link holds the
    # access key id, as every presigned S3 URL does: never the secret key).
    shown = master.experiment(done["id"])["config"]["checkpoint_storage"]
    assert {field: shown[field] for field in keys} == keys
    trial_id = done["trials"][0]["id"]
    for path in (f"/experiments/{done['id']}", f"/trials/{trial_id}", f"/trials/{trial_id}/logs"):
        answer = master.http.get(path).text
        assert s3_server.secret_key not in answer and s3_server.access_key not in answer
    assert s3_server.secret_key not in str(links)
    # The trial printed them: its log shows them masked, as it does an injected secret's.
    printed = master.cli("trial", "logs", trial_id)
    assert printed.returncode == 0, printed.stderr
    assert "spec ********" in printed.stdout and "keys ******** ********" in printed.stdout
    assert s3_server.access_key not in printed.stdout
    assert s3_server.secret_key not in printed.stdout
    # Nor does the database, or any log file (the run's, the master's).
    with sqlite3.connect(master.home / "shipyard.db") as db:
        on_disk = ["\n".join(db.iterdump())]
    on_disk += [path.read_text(errors="replace") for path in master.home.rglob("*.log")]
    assert len(on_disk) > 2 and "S3_ACCESS" in on_disk[0]  # they are real
    for value in (s3_server.access_key, s3_server.secret_key):
        assert all(value not in text for text in on_disk)

    # A secret deleted: the master no longer uses the storage, and says why.
    assert master.http.delete(f"/workspaces/{WORKSPACE}/secrets/S3_ACCESS").status_code == 204
    gone = master.http.get(f"/checkpoints/{latest['uuid']}/links")
    assert gone.status_code == 422 and "secret 'S3_ACCESS' no longer exists" in gone.text


def test_a_trial_resumes_from_its_s3_checkpoint_after_a_crash(master, s3_server, s3_bucket):
    storage = s3_server.storage(s3_bucket, PREFIX)
    hparams = "{steps: 8, ckpt_every: 2, crash_at: 5, crash_runs: 1}"
    exp = master.create(config(storage, hparams, max_restarts=1, entrypoint=PRINTS_KEYS), CODE)
    done = master.wait(exp["id"])
    assert done["state"] == "COMPLETED"
    trial = master.trial(done["trials"][0]["id"])
    assert len(trial["runs"]) == 2
    logs = master.logs(trial["id"])
    assert "resumed from step 4" in logs
    losses = master.metrics(trial["id"], "training", "loss")
    assert [s for s, _ in losses] == list(range(1, 9))  # each step once
    # The config's own secret_key, printed by the trial, is masked in its log (a literal
    # access key id is no secret: it shows), and hidden in the config the API shows.
    assert logs.count(f"keys {s3_server.access_key} ********") == 2  # each run's
    assert s3_server.secret_key not in "\n".join(logs)
    shown = master.experiment(exp["id"])["config"]["checkpoint_storage"]
    assert shown["secret_key"] == "********" and shown["access_key"] == s3_server.access_key


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"bucket": "no-such-bucket"}, "checkpoint_storage.bucket", "does not exist"),
        ({"secret_key": "wrong-secret"}, "checkpoint_storage.access_key", "secret_key"),
        ({"endpoint_url": "http://127.0.0.1:9"}, "checkpoint_storage.endpoint_url", "connect"),
    ],
)
def test_an_unusable_s3_storage_is_refused_at_submit_naming_the_field(
    master, s3_server, s3_bucket, change, field, words
):
    before = master.http.get("/experiments").json()
    storage = {**s3_server.storage(s3_bucket, PREFIX), **change}
    r = master.post_experiment(config(storage, "{steps: 2}"), CODE)
    assert r.status_code == 422, r.text
    details = {d["path"]: d["message"] for d in r.json()["error"]["details"]}
    assert field in details, details
    assert words in details[field].lower()
    assert s3_server.secret_key not in r.text
    assert master.http.get("/experiments").json() == before  # nothing stored


def test_a_trial_killed_mid_upload_leaves_no_checkpoint_and_its_objects_are_removed(
    master, s3_server, s3_bucket, tmp_path
):
    gate = tmp_path / "gate"  # checkpoint_gate.py waits for gate.<run> before checkpoint 10
    Path(f"{gate}.2").touch()  # run 2 passes at once
    storage = s3_server.storage(s3_bucket, PREFIX)
    hparams = (
        f"{{steps: 10, ckpt_every: 5, ckpt_bytes: {300 * 2**20}, gate: {gate}, gate_step: 10}}"
    )
    exp = master.create(
        config(storage, hparams, entrypoint="python3 checkpoint_gate.py", max_restarts=1), CODE
    )
    trial_id = exp["trials"][0]["id"]
    first = master.wait_for(
        lambda: master.trial(trial_id)["latest_checkpoint"], what="checkpoint 5 registered"
    )
    Path(f"{gate}.1").touch()
    victim = poll(
        lambda: s3_server.half_written(s3_bucket, PREFIX, other_than=first),
        "checkpoint 10 half uploaded",
        timeout_s=60,
        every_s=0.02,
    )
    procs.kill(procs.in_directory(str(master.home / "trials" / str(trial_id))))

    done = master.wait(exp["id"], timeout=180)
    assert done["state"] == "COMPLETED"
    trial = master.trial(trial_id)
    assert len(trial["runs"]) == 2
    assert "resumed from step 5" in master.logs(trial_id)
    assert [s for s, _ in master.metrics(trial_id, "training", "loss")] == list(range(1, 11))
    listed = master.http.get(f"/experiments/{exp['id']}/checkpoints").json()
    assert victim not in {c["uuid"] for c in listed}

    master.wait_for(
        lambda: s3_server.nothing_left_of(s3_bucket, PREFIX, victim),
        timeout=60,
        what="the killed upload's objects removed",
    )
    assert victim not in manifests(s3_server, s3_bucket)
