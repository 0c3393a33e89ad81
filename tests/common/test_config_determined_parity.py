"""What Determined users have in their YAML: a checkpoint_storage of retention numbers only
(merged with the master's default storage), slots_per_trial 0 (a CPU-only trial),
force_pull_image, and profiling switched off with its other settings left in."""

from __future__ import annotations

from shipyard.common.config import load_config
from shipyard.common.config.checkpoint import SharedFsStorage
from shipyard.common.errors import ConfigError, NotSupportedYet
from tests.common.conftest import config_error, detail_at

SINGLE = "entrypoint: python3 train.py\nsearcher: {name: single, metric: loss}\n"
DEFAULT_BASE = "/srv/shipyard/checkpoints"


def test_retention_numbers_alone_are_the_masters_default_storage_with_them():
    cfg = load_config(SINGLE + "checkpoint_storage:\n  save_trial_latest: 5\n")
    assert cfg.uses_default_storage()
    assert cfg.checkpoint_base_path(DEFAULT_BASE) == DEFAULT_BASE
    retention = cfg.retention()
    assert (retention.save_experiment_best, retention.save_trial_best) == (0, 1)
    assert retention.save_trial_latest == 5
    # `type:` with nothing after it is no type, as any field left empty is its default
    nulled = load_config(SINGLE + "checkpoint_storage: {type: null, save_trial_best: 2}\n")
    assert nulled.uses_default_storage() and nulled.retention().save_trial_best == 2


def test_the_master_stores_the_merged_storage():
    cfg = load_config(SINGLE + "checkpoint_storage: {save_experiment_best: 2}\n")
    merged = cfg.with_default_storage(DEFAULT_BASE)
    assert isinstance(merged.checkpoint_storage, SharedFsStorage)
    assert not merged.uses_default_storage()
    assert merged.to_json_dict()["checkpoint_storage"] == {
        "type": "shared_fs",
        "host_path": DEFAULT_BASE,
        "storage_path": None,
        "propagation": "rprivate",
        "container_path": None,
        "save_experiment_best": 2,
        "save_trial_best": 1,
        "save_trial_latest": 1,
    }
    assert merged.checkpoint_base_path("/elsewhere") == DEFAULT_BASE
    # A full storage, or none, is left as written.
    assert load_config(SINGLE).with_default_storage(DEFAULT_BASE).checkpoint_storage is None


def test_a_storage_field_without_type_names_the_field_and_the_way_out():
    error = config_error(load_config, SINGLE + "checkpoint_storage: {host_path: /mnt/ckpt}\n")
    assert type(error) is ConfigError
    detail = detail_at(error, "checkpoint_storage.host_path")
    assert detail["line"] == 3
    assert (
        "without 'type', checkpoint_storage takes only save_experiment_best" in (detail["message"])
    )
    assert "give 'type' (shared_fs, directory, s3, gcs, azure)" in detail["message"]


def test_retention_numbers_without_type_are_still_checked():
    error = config_error(load_config, SINGLE + "checkpoint_storage: {save_trial_best: -1}\n")
    assert detail_at(error, "checkpoint_storage.save_trial_best")["message"] == (
        "must be at least 0, got -1"
    )


def test_zero_slots_is_a_cpu_only_trial():
    cfg = load_config(SINGLE + "resources: {slots_per_trial: 0}\n")
    assert cfg.resources.slots_per_trial == 0
    error = config_error(load_config, SINGLE + "resources: {slots_per_trial: -1}\n")
    assert detail_at(error, "resources.slots_per_trial")["message"] == "must be at least 0, got -1"


def test_zero_slots_with_a_launcher_is_refused_at_the_slots():
    error = config_error(
        load_config,
        "entrypoint: python3 -m shipyard.launch.torch_distributed python3 train.py\n"
        "searcher: {name: single, metric: loss}\nresources: {slots_per_trial: 0}\n",
    )
    message = detail_at(error, "resources.slots_per_trial")["message"]
    assert "shipyard.launch.torch_distributed, which runs one rank per slot" in message


def test_force_pull_image_needs_an_image():
    cfg = load_config(SINGLE + "environment: {force_pull_image: true, image: {cpu: py:3.11}}\n")
    assert cfg.environment.force_pull_image
    error = config_error(load_config, SINGLE + "environment: {force_pull_image: true}\n")
    assert type(error) is ConfigError
    assert detail_at(error, "environment.force_pull_image")["message"] == (
        "force_pull_image pulls environment.image before every run, and no image is set: "
        "set environment.image, or remove force_pull_image"
    )


def test_profiling_off_accepts_its_other_settings_but_not_unknown_ones():
    off = "profiling: {enabled: false, begin_on_batch: 50, end_after_batch: 100}\n"
    assert load_config(SINGLE + off).profiling["begin_on_batch"] == 50
    error = config_error(load_config, SINGLE + "profiling: {enabled: false, sampler: x}\n")
    assert isinstance(error, NotSupportedYet)
    assert (
        "profiling.sampler is not supported yet" in detail_at(error, "profiling.sampler")["message"]
    )


def test_profiling_on_is_still_refused_and_off_is_its_default():
    error = config_error(load_config, SINGLE + "profiling: {enabled: true}\n")
    assert isinstance(error, NotSupportedYet)
    assert (
        "profiling.enabled is not supported yet" in detail_at(error, "profiling.enabled")["message"]
    )
    assert load_config(SINGLE + "profiling: {begin_on_batch: 50}\n").profiling
