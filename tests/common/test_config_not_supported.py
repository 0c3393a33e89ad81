"""Determined settings Shipyard parses but does not run yet are refused with NotSupportedYet,
and only when nothing else is wrong."""

from __future__ import annotations

import pytest

from shipyard.common.config import load_config
from shipyard.common.errors import ConfigError, NotSupportedYet
from tests.common.conftest import config_error, detail_at

HEAD = "entrypoint: python3 train.py\n"
SINGLE = HEAD + "searcher: {name: single, metric: loss}\n"


@pytest.mark.parametrize(
    "searcher",
    [
        "{name: adaptive, metric: l, max_length: {batches: 100}, budget: {batches: 1000}}",
        "{name: adaptive_simple, metric: l, max_trials: 4, max_length: 100}",
        "{name: custom, metric: l, unit: batches}",
    ],
)
def test_other_searchers_parse_then_are_refused(searcher):
    error = config_error(load_config, HEAD + f"searcher: {searcher}\n")
    assert isinstance(error, NotSupportedYet)
    assert "is not supported yet" in detail_at(error, "searcher.name")["message"]


def test_unsupported_searcher_fields_are_still_validated():
    error = config_error(
        load_config,
        HEAD + "searcher: {name: adaptive_simple, metric: l, max_trials: 4, mode: wild}\n",
    )
    assert type(error) is ConfigError  # a real mistake, not a missing feature
    assert (
        "'aggressive', 'standard' or 'conservative'" in detail_at(error, "searcher.mode")["message"]
    )
    error = config_error(
        load_config, HEAD + "searcher: {name: adaptive, metric: l, max_trials: 0}\n"
    )
    assert type(error) is ConfigError
    assert detail_at(error, "searcher.max_trials")["message"] == "must be at least 1, got 0"


@pytest.mark.parametrize("name", ["adaptive", "adaptive_simple"])
def test_legacy_adaptive_searchers_point_to_adaptive_asha(name):
    error = config_error(
        load_config, HEAD + f"searcher: {{name: {name}, metric: l, max_trials: 4}}\n"
    )
    assert isinstance(error, NotSupportedYet)
    message = detail_at(error, "searcher.name")["message"]
    assert message.startswith(f"{name} ")
    assert "not supported yet" in message and "use adaptive_asha" in message


def test_trial_api_entrypoint_runs_the_pytorch_trial_runner():
    """Determined's `model_def:MyTrial` is accepted; the trial runs Shipyard's runner."""
    config = load_config("entrypoint: model_def:MNistTrial\nsearcher: {name: single, metric: l}\n")
    assert config.entrypoint_argv() == [
        "python3",
        "-m",
        "shipyard.integrations.determined_trial.run",
        "model_def:MNistTrial",
    ]
    assert config.entrypoint_script() is None


def test_a_trial_class_length_in_epochs_or_records_is_the_searchers_time_metric():
    """The runner's validations report epochs and records; the master compares a length
    with steps_completed (batches) unless the searcher has a time_metric: the config gives
    it one, so a pause at batch 12 of 5 epochs is not the end of the trial."""
    asha = "{name: adaptive_asha, metric: l, max_trials: 4, max_length: {epochs: 16}}"
    searcher = load_config(f"entrypoint: model_def:MyTrial\nsearcher: {asha}\n").searcher
    assert (searcher.time_metric, searcher.max_time, searcher.max_length) == ("epochs", 16, None)
    single = "{name: single, metric: l, max_length: {records: 640}}"
    searcher = load_config(f"entrypoint: model_def:MyTrial\nsearcher: {single}\n").searcher
    assert (searcher.time_metric, searcher.max_time) == ("records", 640)
    batches = "{name: single, metric: l, max_length: {batches: 50}}"
    searcher = load_config(f"entrypoint: model_def:MyTrial\nsearcher: {batches}\n").searcher
    assert searcher.time_metric is None and searcher.max_length is not None  # steps already
    script = load_config(f"entrypoint: python3 train.py\nsearcher: {asha}\n").searcher
    assert script.time_metric is None  # a script reports what it likes


@pytest.mark.parametrize(
    ("extra", "path"),
    [
        ("resources: {shm_size: 4294967296}\n", "resources.shm_size"),
        ("environment: {registry_auth: {username: u}}\n", "environment.registry_auth"),
        ("environment: {pod_spec: {kind: Pod}}\n", "environment.pod_spec"),
        ("environment: {add_capabilities: [SYS_ADMIN]}\n", "environment.add_capabilities"),
        ("checkpoint_policy: all\n", "checkpoint_policy"),
        ("checkpoint_storage: {type: gcs, bucket: ckpts}\n", "checkpoint_storage.type"),
        ("profiling: {enabled: true}\n", "profiling.enabled"),
        ("optimizations: {aggregation_frequency: 4}\n", "optimizations.aggregation_frequency"),
        ("debug: true\n", "debug"),
        ("slurm: {gpu_type: a100}\n", "slurm"),
        (
            "searcher: {name: single, metric: loss, source_trial_id: 7}\n",
            "searcher.source_trial_id",
        ),
    ],
)
def test_non_default_unsupported_settings_name_the_field(extra, path):
    base = HEAD if extra.startswith("searcher") else SINGLE
    error = config_error(load_config, base + extra)
    assert isinstance(error, NotSupportedYet)
    assert "not supported yet" in detail_at(error, path)["message"]


def test_unsupported_settings_at_determined_defaults_are_accepted():
    cfg = load_config(
        SINGLE
        + "profiling: {enabled: false, begin_on_batch: 0}\n"
        + "optimizations: {mixed_precision: O0, aggregation_frequency: 1}\n"
        + "debug: false\nscheduling_unit: 100\nresources: {weight: 1, shm_size: null}\n"
        + "checkpoint_policy: best\nenvironment: {force_pull_image: false, pod_spec: null}\n"
    )
    assert cfg.checkpoint_policy == "best"


def test_several_unsupported_settings_are_listed_together():
    error = config_error(load_config, SINGLE + "debug: true\nresources: {shm_size: 1024}\n")
    assert isinstance(error, NotSupportedYet)
    assert len(error.details) == 2
    assert "not supported yet" in error.message


def test_a_real_error_among_unsupported_ones_makes_a_plain_config_error():
    error = config_error(load_config, SINGLE + "debug: true\nmax_restarts: many\n")
    assert type(error) is ConfigError
    assert {d["path"] for d in error.details} == {"debug", "max_restarts"}
