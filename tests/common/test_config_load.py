"""Determined-style configs load, with the values and normalized forms others rely on."""

from __future__ import annotations

import json

from shipyard.common.config import ExperimentConfig, config_from_dict, load_config, load_config_file
from tests.common.conftest import CONFIGS

MINIMAL = """
entrypoint: python3 train.py
searcher: {name: single, metric: loss}
"""


def test_determined_const_config_loads_with_its_values():
    cfg = load_config_file(CONFIGS / "const.yaml")
    assert isinstance(cfg, ExperimentConfig)
    assert cfg.name == "mnist_pytorch_const"
    assert cfg.max_restarts == 0
    assert cfg.entrypoint_argv() == ["python3", "train.py", "--epochs", "1"]
    assert cfg.hyperparameter_space()["learning_rate"] == {"type": "const", "val": 1.0}
    searcher = cfg.searcher_dict()
    assert searcher["name"] == "single"
    assert searcher["metric"] == "validation_loss"
    assert searcher["smaller_is_better"] is True
    assert (searcher["max_length"], searcher["max_length_unit"]) == (1, "epochs")
    assert searcher["max_trials"] == 1


def test_defaults_follow_determined():
    cfg = load_config(MINIMAL)
    data = cfg.to_json_dict()
    assert data["workspace"] == data["project"] == "Uncategorized"
    assert (data["resources"]["slots_per_trial"], data["resources"]["priority"]) == (1, 42)
    assert data["max_restarts"] == 5
    assert data["checkpoint_storage"] is None
    assert data["reproducibility"] == {"experiment_seed": None}
    assert cfg.searcher_dict()["smaller_is_better"] is True
    assert cfg.searcher_dict()["max_length"] is None
    assert cfg.checkpoint_base_path("/home/me/.shipyard/checkpoints") == (
        "/home/me/.shipyard/checkpoints"
    )


def test_full_config_normalizes_every_section():
    cfg = load_config_file(CONFIGS / "random_full.yaml")
    space = cfg.hyperparameter_space()
    assert space["lr"] == {"type": "log", "minval": -4, "maxval": -1, "base": 10, "count": None}
    assert space["layers"] == {"type": "int", "minval": 1, "maxval": 4, "count": None}
    assert space["momentum"] == {"type": "double", "minval": 0.8, "maxval": 0.99, "count": None}
    assert space["optimizer"] == {"type": "categorical", "vals": ["sgd", "adam"]}
    assert space["widths"] == {"type": "const", "val": [64, 128, 256]}
    assert space["augment"] == {
        "type": "object",
        "vals": {
            "flip": {"type": "const", "val": True},
            "crop": {"type": "categorical", "vals": [24, 28]},
        },
    }
    searcher = cfg.searcher_dict()
    assert (searcher["max_trials"], searcher["max_concurrent_trials"]) == (8, 2)
    assert (searcher["max_length"], searcher["max_length_unit"]) == (2000, "batches")
    assert cfg.resources.priority == 10
    assert cfg.checkpoint_base_path("/unused") == "/mnt/checkpoints/cifar"
    assert cfg.env_vars() == {"OMP_NUM_THREADS": "4", "NCCL_DEBUG": "INFO"}

    data = json.loads(json.dumps(cfg.to_json_dict()))
    assert data["labels"] == ["vision", "baseline"]
    assert data["workspace"] == "research"
    assert data["bind_mounts"] == [
        {
            "host_path": "/data",
            "container_path": "/data",
            "read_only": True,
            "propagation": "rprivate",
        }
    ]
    assert data["checkpoint_storage"]["save_experiment_best"] == 2
    assert data["min_validation_period"] == {"batches": 500}
    assert data["reproducibility"]["experiment_seed"] == 1234
    assert data["environment"]["environment_variables"] == cfg.env_vars()
    assert data["environment"]["image"]["cuda"] == "determinedai/pytorch-ngc-dev:0736b6d"
    assert data["hyperparameters"] == space
    assert data["searcher"] == searcher
    assert "profiling" not in data  # accepted at its default, not carried along


def test_yaml_1_2_exponent_numbers_are_numbers():
    cfg = load_config(
        MINIMAL
        + "hyperparameters:\n  lr: 1e-4\n  wd: {type: double, minval: 1.0e-5, maxval: 1e-2}\n"
    )
    assert cfg.hyperparameter_space()["lr"] == {"type": "const", "val": 0.0001}
    assert cfg.hyperparameter_space()["wd"]["minval"] == 1e-5


def test_null_section_means_defaults():
    cfg = load_config(MINIMAL + "resources:\nenvironment: null\nhyperparameters:\n")
    assert cfg.resources.slots_per_trial == 1
    assert cfg.env_vars() == {}
    assert cfg.hyperparameter_space() == {}


def test_const_null_value_is_kept():
    cfg = load_config(MINIMAL + "hyperparameters:\n  extra: {type: const, val: null}\n")
    assert cfg.hyperparameter_space()["extra"] == {"type": "const", "val": None}


def test_directory_storage_and_storage_path_forms():
    cfg = load_config(MINIMAL + "checkpoint_storage: {type: directory, container_path: /ckpt}\n")
    assert cfg.checkpoint_base_path("/default") == "/ckpt"
    cfg = load_config(
        MINIMAL + "checkpoint_storage: {type: shared_fs, host_path: /mnt/a, "
        "storage_path: /mnt/a/b/}\n"
    )
    assert cfg.checkpoint_base_path("/default") == "/mnt/a/b"


def test_config_from_dict_matches_yaml():
    cfg = config_from_dict(
        {"entrypoint": ["python3", "train.py"], "searcher": {"name": "single", "metric": "loss"}}
    )
    assert cfg.entrypoint_script() == "train.py"
    assert cfg.to_json_dict()["entrypoint"] == ["python3", "train.py"]
