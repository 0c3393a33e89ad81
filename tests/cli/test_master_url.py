"""Which master the CLI and the SDK talk to."""

from __future__ import annotations

import json

import pytest

from shipyard.client.master_url import resolve_master_url
from shipyard.common.errors import InvalidRequest


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("SHIPYARD_HOME", str(tmp_path))
    monkeypatch.delenv("SHIPYARD_MASTER", raising=False)
    return tmp_path


def write_master_json(home, url):
    (home / "master.json").write_text(json.dumps({"url": url, "pid": 1, "port": 1, "home": "x"}))


def test_default_when_nothing_is_configured(home):
    assert resolve_master_url() == "http://127.0.0.1:8080"


def test_master_json_beats_the_default(home):
    write_master_json(home, "http://127.0.0.1:9123")
    assert resolve_master_url() == "http://127.0.0.1:9123"


def test_environment_beats_master_json(home, monkeypatch):
    write_master_json(home, "http://127.0.0.1:9123")
    monkeypatch.setenv("SHIPYARD_MASTER", "http://10.0.0.5:8080/")
    assert resolve_master_url() == "http://10.0.0.5:8080"


def test_explicit_argument_beats_everything(home, monkeypatch):
    write_master_json(home, "http://127.0.0.1:9123")
    monkeypatch.setenv("SHIPYARD_MASTER", "http://10.0.0.5:8080")
    assert resolve_master_url("localhost:9000") == "http://localhost:9000"


def test_corrupt_master_json_names_the_file(home):
    (home / "master.json").write_text("{not json")
    with pytest.raises(InvalidRequest, match="master.json is not valid JSON"):
        resolve_master_url()


def test_unsupported_scheme_is_refused(home):
    with pytest.raises(InvalidRequest, match="http://"):
        resolve_master_url("ftp://example.com")
