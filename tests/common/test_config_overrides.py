"""`--config KEY=VALUE` overrides and partial configs merged over whole ones
(shipyard.common.config.overrides): what `experiment create`, `fork` and `continue` apply."""

from __future__ import annotations

import pytest

from shipyard.common.config import load_config
from shipyard.common.config.overrides import (
    apply_overrides,
    merge,
    overridden_text,
    parse_override,
    parse_overrides,
)
from shipyard.common.errors import ConfigError, InvalidRequest

CONFIG = """\
# a comment kept when nothing changes
name: base
entrypoint: python3 train.py
hyperparameters: {lr: 0.1, layers: {a: 1}}
searcher: {name: single, metric: loss, max_length: {batches: 10}}
"""


def test_values_are_read_as_yaml():
    assert parse_overrides(
        ["a=1e-4", "b=true", "c=[1, 2]", "d={k: v}", "e=x,y", "f=text", "g=", "a=2"]
    ) == {"a": 2, "b": True, "c": [1, 2], "d": {"k": "v"}, "e": ["x", "y"], "f": "text", "g": None}


@pytest.mark.parametrize("text", ["novalue", "=1", " =1", "a..b=1", ".a=1"])
def test_a_malformed_override_names_itself(text):
    with pytest.raises(InvalidRequest) as caught:
        parse_override(text)
    assert str(caught.value).startswith("--config ")


def test_dotted_paths_make_missing_sections_and_refuse_values():
    assert apply_overrides({"a": {"b": 1}}, {"a.c.d": 2, "e": 3}) == {
        "a": {"b": 1, "c": {"d": 2}},
        "e": 3,
    }
    with pytest.raises(ConfigError, match="cannot set a.b.c: a.b is the value 1, not a section"):
        apply_overrides({"a": {"b": 1}}, {"a.b.c": 2})
    with pytest.raises(ConfigError, match="a is a list"):
        apply_overrides({"a": [1]}, {"a.b": 2})


def test_merge_is_key_by_key_for_sections_only():
    assert merge({"s": {"a": 1, "b": 2}, "l": [1, 2]}, {"s": {"b": 3}, "l": [3]}) == {
        "s": {"a": 1, "b": 3},
        "l": [3],
    }


def test_overridden_text_is_validated_as_any_config():
    assert overridden_text(CONFIG, "c.yaml", {}) == CONFIG  # untouched, comment and all
    text = overridden_text(
        CONFIG,
        "c.yaml",
        {"hyperparameters.lr": 0.5, "searcher.max_length.batches": 20},
        {"hyperparameters": {"layers": {"b": 2}}, "description": "merged"},
    )
    cfg = load_config(text, "c.yaml")
    assert cfg.description == "merged"
    assert cfg.hyperparameter_space()["lr"] == {"type": "const", "val": 0.5}
    assert cfg.searcher.training_length() == 20
    bad = overridden_text(CONFIG, "c.yaml", {"searcher.max_length.batches": -1})
    with pytest.raises(ConfigError, match="searcher.max_length"):
        load_config(bad, "c.yaml")
