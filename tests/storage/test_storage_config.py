"""checkpoint_storage is validated once, by the config model; the storage gets the directory
it resolves to, and a trial gets that directory from the master (SHIPYARD_CHECKPOINT_STORAGE)."""

from __future__ import annotations

import json

import pytest

import shipyard.core
from shipyard.common.config import config_from_dict
from shipyard.common.errors import ConfigError, InvalidRequest, NotSupportedYet
from shipyard.storage import storage_at
from tests.common.conftest import config_error, detail_at

MINIMAL = {"entrypoint": "python3 train.py", "searcher": {"name": "single", "metric": "loss"}}


def with_storage(storage: dict) -> dict:
    return {**MINIMAL, "checkpoint_storage": storage}


def test_every_directory_form_resolves_to_the_storage_base(tmp_path):
    forms = [
        {"type": "shared_fs", "host_path": str(tmp_path)},
        {"type": "directory", "container_path": str(tmp_path)},
    ]
    for form in forms:
        base = config_from_dict(with_storage(form)).checkpoint_base_path("/default")
        assert storage_at(base).location("ck") == str(tmp_path / "ck")
    determined = {"type": "shared_fs", "host_path": str(tmp_path), "storage_path": "ckpts"}
    base = config_from_dict(with_storage(determined)).checkpoint_base_path("/default")
    assert storage_at(base).location("ck") == str(tmp_path / "ckpts" / "ck")


@pytest.mark.parametrize(
    "storage",
    [
        {"type": "gcs", "bucket": "b"},
        {"type": "azure", "container": "b"},
    ],
)
def test_gcs_and_azure_are_not_supported_yet(storage):
    error = config_error(config_from_dict, with_storage(storage))
    assert isinstance(error, NotSupportedYet)
    assert storage["type"] in detail_at(error, "checkpoint_storage.type")["message"]


@pytest.mark.parametrize(
    ("storage", "path"),
    [
        ({"type": "ftp", "host_path": "/x"}, "checkpoint_storage.type"),
        ({"type": "shared_fs"}, "checkpoint_storage.host_path"),
        ({"type": "shared_fs", "host_path": "relative/dir"}, "checkpoint_storage.host_path"),
        ({"type": "directory", "container_path": "rel"}, "checkpoint_storage.container_path"),
        (
            {"type": "shared_fs", "host_path": "/mnt/c", "storage_path": "../escape"},
            "checkpoint_storage.storage_path",
        ),
    ],
)
def test_bad_storage_config_names_the_field(storage, path):
    error = config_error(config_from_dict, with_storage(storage))
    assert type(error) is ConfigError
    detail_at(error, path)


@pytest.mark.parametrize(
    "value",
    [
        '{"type": "shared_fs"}',
        '{"type": "shared_fs", "base_path": "relative/dir"}',
        '{"type": "s3", "base_path": "/x"}',
        '"/a/path"',
    ],
)
def test_a_trial_refuses_a_storage_variable_without_an_absolute_directory(value, monkeypatch):
    monkeypatch.setenv("SHIPYARD_CHECKPOINT_STORAGE", value)
    with shipyard.core.init() as ctx:
        with pytest.raises(InvalidRequest, match="SHIPYARD_CHECKPOINT_STORAGE"):
            with ctx.checkpoint.store_path():
                pytest.fail("no checkpoint without a valid storage")


def test_a_trial_writes_into_the_directory_the_master_gives(tmp_path, monkeypatch):
    where = {"type": "shared_fs", "base_path": str(tmp_path)}
    monkeypatch.setenv("SHIPYARD_CHECKPOINT_STORAGE", json.dumps(where))
    with shipyard.core.init() as ctx:
        with ctx.checkpoint.store_path() as (path, uuid):
            (path / "w").write_text("1")
    assert (tmp_path / uuid / "w").read_text() == "1"
    assert (tmp_path / uuid / "metadata.json").is_file()


def test_s3_storage_takes_determineds_fields():
    storage = {
        "type": "s3",
        "bucket": "team-bucket",
        "prefix": "/exp/ckpts/",
        "endpoint_url": "https://s3.example.com",
        "region": "eu-west-1",
        "access_key": "AK",
        "secret_key": "SK",
        "save_trial_best": 2,
    }
    cfg = config_from_dict(with_storage(storage))
    assert cfg.checkpoint_base_path("/default") == "s3://team-bucket/exp/ckpts"
    assert cfg.retention().save_trial_best == 2
    assert cfg.checkpoint_storage.spec() == {
        "type": "s3",
        "bucket": "team-bucket",
        "prefix": "exp/ckpts",
        "endpoint_url": "https://s3.example.com",
        "region": "eu-west-1",
        "access_key": "AK",
        "secret_key": "SK",
    }


@pytest.mark.parametrize(
    ("storage", "path"),
    [
        ({"type": "s3"}, "checkpoint_storage.bucket"),
        ({"type": "s3", "bucket": "ab"}, "checkpoint_storage.bucket"),
        (
            {"type": "s3", "bucket": "abc", "endpoint_url": "s3.local"},
            "checkpoint_storage.endpoint_url",
        ),
        ({"type": "s3", "bucket": "abc", "prefix": "a/../b"}, "checkpoint_storage.prefix"),
        ({"type": "s3", "bucket": "abc", "access_key": "AK"}, "checkpoint_storage.secret_key"),
    ],
)
def test_bad_s3_storage_names_the_field(storage, path):
    error = config_error(config_from_dict, with_storage(storage))
    assert type(error) is ConfigError
    detail_at(error, path)


def test_gcs_points_at_its_s3_interoperability():
    error = config_error(config_from_dict, with_storage({"type": "gcs", "bucket": "b"}))
    assert "use s3 with the provider's S3-compatible endpoint" in str(
        detail_at(error, "checkpoint_storage.type")["message"]
    )
