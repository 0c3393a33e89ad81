"""The config's `secrets:` section: its three forms, and every mistake reported at its path;
and checkpoint storage keys given as `{secret: NAME}`."""

from __future__ import annotations

import pytest

from shipyard.common.config import load_config
from shipyard.server.services.experiment_config import from_stored
from tests.common.conftest import config_error, detail_at

BASE = "entrypoint: python3 train.py\nsearcher: {name: single, metric: loss}\n"


def test_the_three_forms_and_their_stored_form():
    cfg = load_config(
        BASE + "secrets: [WANDB_API_KEY, {name: HF, env: HF_TOKEN}, {name: GCP, file: ./a/k.json}]"
    )
    uses = [(u.name, u.env, u.file) for u in cfg.secrets]
    assert uses == [
        ("WANDB_API_KEY", "WANDB_API_KEY", None),
        ("HF", "HF_TOKEN", None),
        ("GCP", None, "a/k.json"),
    ]
    stored = cfg.to_json_dict()
    assert from_stored(stored).to_json_dict() == stored
    assert load_config(BASE).secrets == []


@pytest.mark.parametrize(
    ("entries", "path", "words"),
    [
        ("[OK, not-a-name]", "secrets[1]", "not a valid name"),
        ("[OK, {name: 'a b'}]", "secrets[1].name", "not a valid name"),
        ("[OK, {env: X}]", "secrets[1].name", "required"),
        ("[OK, {name: B, env: OK}]", "secrets[1].env", "already given by secrets[0]"),
        ("[OK, {name: B, env: SHIPYARD_X}]", "secrets[1].env", "Shipyard's"),
        ("[OK, {name: B, env: X, file: y}]", "secrets[1]", "not both"),
        ("[OK, {name: B, file: ../up}]", "secrets[1].file", "relative path inside"),
        ("[OK, {name: B, file: /etc/passwd}]", "secrets[1].file", "relative path inside"),
        ("[OK, {name: B, file: a.txt}, {name: C, file: ./a.txt}]", "secrets[2].file", "secrets[1]"),
        ("[OK, {name: B, evn: X}]", "secrets[1].evn", "did you mean 'env'"),
        ("[OK, 7]", "secrets[1]", "got 7"),
        ("OK", "secrets", "a list of secrets"),
    ],
)
def test_mistakes_name_their_path(entries, path, words):
    error = config_error(load_config, BASE + f"secrets: {entries}\n")
    assert words in detail_at(error, path)["message"]


# -- checkpoint storage keys from secrets ----------------------------------------------------

S3 = BASE + "checkpoint_storage: {type: s3, bucket: bkt, endpoint_url: 'http://s3:9000', "


def test_storage_keys_are_strings_or_secrets_and_the_stored_config_keeps_the_names():
    from shipyard.server.services.checkpoint_storage import keys_to_mask, without_credentials

    cfg = load_config(S3 + "access_key: {secret: S3_ID}, secret_key: {secret: S3_KEY}}\n")
    storage = cfg.checkpoint_storage
    assert storage.secret_names() == {"access_key": "S3_ID", "secret_key": "S3_KEY"}
    values = {"S3_ID": "id-from-secret", "S3_KEY": "key-from-secret"}
    assert storage.spec(values) == {
        "type": "s3",
        "bucket": "bkt",
        "endpoint_url": "http://s3:9000",
        "access_key": "id-from-secret",
        "secret_key": "key-from-secret",
    }
    stored = cfg.to_json_dict()
    assert stored["checkpoint_storage"]["access_key"] == {"secret": "S3_ID"}
    assert from_stored(stored).to_json_dict() == stored
    assert without_credentials(stored) == stored  # names only: nothing to hide
    assert keys_to_mask(cfg, values) == {  # both come from secrets: both masked in output
        "SHIPYARD_CHECKPOINT_ACCESS_KEY": "id-from-secret",
        "SHIPYARD_CHECKPOINT_SECRET_KEY": "key-from-secret",
    }

    literal = load_config(S3 + "access_key: AKID, secret_key: {secret: S3_KEY}}\n")
    assert literal.checkpoint_storage.secret_names() == {"secret_key": "S3_KEY"}
    assert keys_to_mask(literal, values) == {"SHIPYARD_CHECKPOINT_SECRET_KEY": "key-from-secret"}
    determined = load_config(S3 + "access_key: AKID, secret_key: SK-in-the-config}\n")
    assert determined.checkpoint_storage.spec()["secret_key"] == "SK-in-the-config"
    assert keys_to_mask(determined, {}) == {"SHIPYARD_CHECKPOINT_SECRET_KEY": "SK-in-the-config"}
    shown = without_credentials(determined.to_json_dict())["checkpoint_storage"]
    assert shown["secret_key"] == "********" and shown["access_key"] == "AKID"


@pytest.mark.parametrize(
    ("keys", "path", "words"),
    [
        ("access_key: {secret: not-a-name}, secret_key: x", ".access_key.secret", "not a valid"),
        ("access_key: {secret: 7}, secret_key: x", ".access_key.secret", "a secret's name, got 7"),
        ("access_key: {name: A}, secret_key: x", ".access_key", "a string or {secret: NAME}"),
        ("access_key: {secret: A, env: B}, secret_key: x", ".access_key", "got a mapping"),
        ("access_key: 7, secret_key: x", ".access_key", "got 7"),
        ("access_key: {secret: A}", ".secret_key", "go together"),
    ],
)
def test_storage_key_mistakes_name_their_path(keys, path, words):
    error = config_error(load_config, S3 + keys + "}\n")
    assert words in detail_at(error, "checkpoint_storage" + path)["message"]
