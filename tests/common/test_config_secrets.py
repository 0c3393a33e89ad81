"""The config's `secrets:` section: its three forms, and every mistake reported at its path."""

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
