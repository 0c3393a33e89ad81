"""The experiment config: Determined's format, validated with pydantic.

cfg = load_config(yaml_text, "const.yaml")   # ConfigError lists every problem at once
cfg.hyperparameter_space(); cfg.searcher_dict(); cfg.to_json_dict()
"""

from shipyard.common.config.experiment import ExperimentConfig
from shipyard.common.config.parse import (
    config_from_dict,
    load_config,
    load_config_file,
    validate_context,
)

__all__ = [
    "ExperimentConfig",
    "config_from_dict",
    "load_config",
    "load_config_file",
    "validate_context",
]
