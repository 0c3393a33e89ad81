"""Bad configs: every problem at once, each with its path, line, column and a plain message."""

from __future__ import annotations

import pytest

from shipyard.common.config import load_config, load_config_file
from shipyard.common.errors import ConfigError, NotSupportedYet
from tests.common.conftest import config_error, detail_at

BAD_TYPES = """\
name: typed
entrypoint: python3 train.py
searcher:
  name: random
  metric: loss
  max_trials: ten
  smaller_is_better: maybe
resources:
  slots_per_trial: 2.5
  priority: 100
max_restarts: -1
"""


def test_wrong_types_name_the_path_line_and_what_was_expected():
    error = config_error(load_config, BAD_TYPES, "exp.yaml")
    assert type(error) is ConfigError
    trials = detail_at(error, "searcher.max_trials")
    assert trials["message"] == "expected an integer, got 'ten'"
    assert (trials["line"], trials["column"]) == (6, 15)
    assert detail_at(error, "searcher.smaller_is_better")["message"] == (
        "expected true or false, got 'maybe'"
    )
    assert detail_at(error, "resources.slots_per_trial")["line"] == 9
    assert detail_at(error, "resources.priority")["message"] == "must be at most 99, got 100"
    assert detail_at(error, "max_restarts")["message"] == "must be at least 0, got -1"
    assert len(error.details) == 5  # all of them, in one error
    assert "exp.yaml has 5 problems" in str(error)


def test_unknown_fields_suggest_the_nearest_name():
    text = (
        "entrypoint: python3 train.py\n"
        "searcher:\n"
        "  name: single\n"
        "  metric: loss\n"
        "  max_lenght: 100\n"
        "hyperparameter:\n"
        "  lr: 0.1\n"
        "zzz_custom: 1\n"
    )
    error = config_error(load_config, text)
    typo = detail_at(error, "searcher.max_lenght")
    assert typo["message"] == "unknown field 'max_lenght'; did you mean 'max_length'?"
    assert (typo["line"], typo["column"]) == (5, 3)
    top = detail_at(error, "hyperparameter")
    assert "did you mean 'hyperparameters'?" in top["message"]
    assert detail_at(error, "zzz_custom")["message"] == "unknown field 'zzz_custom'"


def test_unknown_field_inside_a_hyperparameter():
    text = (
        "entrypoint: python3 train.py\n"
        "searcher: {name: single, metric: loss}\n"
        "hyperparameters:\n"
        "  model:\n"
        "    layers: {type: int, minval: 1, maxval: 4, cout: 2}\n"
    )
    error = config_error(load_config, text)
    typo = detail_at(error, "hyperparameters.model.layers.cout")
    assert "did you mean 'count'?" in typo["message"]
    assert typo["line"] == 5


def test_hyperparameter_problems():
    text = (
        "entrypoint: python3 train.py\n"
        "searcher: {name: random, metric: loss, max_trials: 2}\n"
        "hyperparameters:\n"
        "  lr: {type: logg, minval: -4, maxval: -1}\n"
        "  layers: {type: int, minval: 1.5, maxval: 4}\n"
        "  drop: {type: double, minval: 0.5, maxval: 0.1}\n"
        "  opt: {type: categorical, vals: []}\n"
        "  bad_count: {type: int, minval: 1, maxval: 4, count: -1}\n"
    )
    error = config_error(load_config, text)
    kind = detail_at(error, "hyperparameters.lr.type")
    assert "unknown hyperparameter type 'logg'" in kind["message"]
    assert "const, int, double, log, categorical" in kind["message"]
    assert "did you mean 'log'?" in kind["message"]
    assert detail_at(error, "hyperparameters.layers.minval")["message"] == (
        "expected an integer, got 1.5"
    )
    assert "smaller than minval" in detail_at(error, "hyperparameters.drop.maxval")["message"]
    assert detail_at(error, "hyperparameters.bad_count.count")["line"] == 8


def test_empty_categorical_outside_grid_is_an_error():
    text = (
        "entrypoint: python3 train.py\n"
        "searcher: {name: random, metric: loss, max_trials: 2}\n"
        "hyperparameters:\n"
        "  opt: {type: categorical, vals: []}\n"
    )
    error = config_error(load_config, text)
    assert detail_at(error, "hyperparameters.opt.vals")["message"] == (
        "hyperparameters.opt has no values"
    )


def test_missing_required_fields():
    error = config_error(load_config, "name: x\nsearcher: {name: random, metric: loss}\n")
    assert detail_at(error, "entrypoint")["message"] == "required field is missing"
    assert detail_at(error, "searcher.max_trials")["message"] == "required field is missing"
    assert detail_at(error, "searcher.max_trials")["line"] == 2


def test_unknown_searcher_and_missing_name():
    error = config_error(
        load_config, "entrypoint: python3 t.py\nsearcher: {name: randon, metric: loss}\n"
    )
    detail = detail_at(error, "searcher.name")
    assert "unknown searcher 'randon'" in detail["message"]
    assert "did you mean 'random'?" in detail["message"]
    error = config_error(load_config, "entrypoint: python3 t.py\nsearcher: {metric: loss}\n")
    assert detail_at(error, "searcher.name")["message"] == "required field is missing"


def test_malformed_yaml_reports_the_parser_position():
    text = "entrypoint: python3 train.py\nsearcher: {name: single\nmetric: loss\n"
    error = config_error(load_config, text, "broken.yaml")
    assert type(error) is ConfigError
    (detail,) = error.details
    assert detail["line"] == 3
    assert detail["column"] is not None
    assert "broken.yaml is not valid YAML" in error.message
    assert "flow mapping" in detail["message"]


def test_a_control_character_is_a_config_error():
    # PyYAML's reader refuses it before parsing starts (found by test_api_schema.py: a 500).
    error = config_error(load_config, "name: x\nentrypoint: python3 t.py\x02\n", "ctl.yaml")
    assert type(error) is ConfigError
    assert error.message == (
        "ctl.yaml is not valid YAML: character #x0002 is not allowed in YAML at line 2, column 25"
    )
    assert (error.details[0]["line"], error.details[0]["column"]) == (2, 25)


def test_tab_indentation_is_reported_with_its_line():
    error = config_error(load_config, "searcher:\n\tname: single\n")
    assert error.details[0]["line"] == 2


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("- entrypoint: x\n", "got a list"),
        ("just a string\n", "got the value 'just a string'"),
        ("", "is empty"),
        ("# only a comment\n", "is empty"),
    ],
)
def test_top_level_must_be_a_mapping(text, expected):
    error = config_error(load_config, text)
    assert expected in str(error)


def test_duplicate_keys_are_refused():
    error = config_error(
        load_config,
        "entrypoint: python3 a.py\nsearcher: {name: single, metric: l}\nentrypoint: python3 b.py\n",
    )
    detail = detail_at(error, "entrypoint")
    assert detail["line"] == 3
    assert "first given on line 1" in detail["message"]


def test_yaml_anchors_and_merge_keys_work():
    text = (
        "base: &base {name: random, metric: loss}\n"
        "entrypoint: python3 train.py\n"
        "searcher:\n"
        "  <<: *base\n"
        "  max_trials: 3\n"
    )
    error = config_error(load_config, text)  # `base` is not a field...
    assert detail_at(error, "base")["message"] == "unknown field 'base'"
    assert len(error.details) == 1  # ...but the merged searcher is fine


def test_paths_in_lists_and_absolute_path_checks():
    text = (
        "entrypoint: python3 train.py\n"
        "searcher: {name: single, metric: loss}\n"
        "bind_mounts:\n"
        "  - host_path: /data\n"
        "    container_path: /data\n"
        "  - host_path: relative/dir\n"
        "    container_path: /x\n"
        "checkpoint_storage: {type: shared_fs, host_path: /mnt/c, storage_path: ../escape}\n"
    )
    error = config_error(load_config, text)
    mount = detail_at(error, "bind_mounts[1].host_path")
    assert mount["message"] == "must be an absolute path, got 'relative/dir'"
    assert mount["line"] == 6
    assert "outside host_path" in detail_at(error, "checkpoint_storage.storage_path")["message"]


def test_resource_pool_name_is_checked_by_the_master_not_the_config():
    base = "entrypoint: python3 t.py\nsearcher: {name: single, metric: l}\nresources: %s\n"
    # Which pools exist only the master knows (tests/e2e/test_pools.py); the name is kept.
    assert load_config(base % "{resource_pool: gpu-pool}").resources.resource_pool == "gpu-pool"
    error = config_error(load_config, base % "{resource_pool: ' '}")
    assert "cannot be empty" in detail_at(error, "resources.resource_pool")["message"]


def test_preemption_timeout_is_whole_seconds_from_one():
    base = "entrypoint: python3 t.py\nsearcher: {name: single, metric: l}\npreemption_timeout: %s\n"
    assert load_config(base % "30").preemption_timeout == 30
    error = config_error(load_config, base % "0")
    assert detail_at(error, "preemption_timeout")["message"] == "must be at least 1, got 0"


def test_max_length_forms():
    base = "entrypoint: python3 t.py\nsearcher: {name: single, metric: l, max_length: %s}\n"
    assert load_config(base % "500").searcher_dict()["max_length_unit"] is None
    error = config_error(load_config, base % "{steps: 5}")
    assert "unknown unit 'steps'" in detail_at(error, "searcher.max_length.steps")["message"]
    error = config_error(load_config, base % "{batches: 5, epochs: 1}")
    assert (
        "exactly one of batches, records, epochs"
        in detail_at(error, "searcher.max_length")["message"]
    )


def test_missing_file():
    error = config_error(load_config_file, "/nonexistent/exp.yaml")
    assert not isinstance(error, NotSupportedYet)
    assert "does not exist" in error.message


def test_non_string_keys_are_named():
    error = config_error(
        load_config,
        "entrypoint: python3 t.py\nsearcher: {name: single, metric: l}\ndata: {2: z}\n",
    )
    assert detail_at(error, "data[2]")["message"] == "keys here must be strings, got 2"
