"""The experiment config: Determined's format, validated with pydantic.

cfg = load_config(yaml_text, "const.yaml")   # ConfigError lists every problem at once
cfg.searcher (typed); cfg.hyperparameter_space(); cfg.searcher_dict(); cfg.to_json_dict()
searcher_from_json(stored)  # the typed searcher again, from what the master stored
"""

from shipyard.common.config.experiment import ExperimentConfig
from shipyard.common.config.parse import (
    config_from_dict,
    load_config,
    load_config_file,
    searcher_from_json,
    validate_context,
)

__all__ = [
    "ExperimentConfig",
    "config_from_dict",
    "load_config",
    "load_config_file",
    "searcher_from_json",
    "validate_context",
]
