"""Every example config is one Shipyard accepts, and runs the trials its comment promises."""

from __future__ import annotations

from pathlib import Path

import pytest

from shipyard.common.config import load_config_file, validate_context
from tests.examples.local_run import EXAMPLES

CONFIGS = sorted(EXAMPLES.glob("*/*.yaml"))

# (example, config) -> (searcher, trials it runs, metric)
EXPECTED = {
    ("quadratic", "const.yaml"): ("single", 1, "validation_loss"),
    ("quadratic", "random.yaml"): ("random", 8, "validation_loss"),
    ("quadratic", "grid.yaml"): ("grid", 6, "validation_loss"),
    ("quadratic", "asha.yaml"): ("adaptive_asha", 16, "validation_loss"),
    ("digits_pytorch", "const.yaml"): ("single", 1, "validation_accuracy"),
    ("digits_pytorch", "random.yaml"): ("random", 4, "validation_accuracy"),
    ("digits_pytorch", "grid.yaml"): ("grid", 8, "validation_accuracy"),
    ("digits_pytorch", "trainer.yaml"): ("single", 1, "validation_accuracy"),
    ("digits_pytorch", "distributed.yaml"): ("single", 1, "validation_accuracy"),
    ("digits_pytorch", "adaptive.yaml"): ("adaptive_asha", 6, "validation_accuracy"),
    ("digits_lightning", "const.yaml"): ("single", 1, "validation_accuracy"),
    ("digits_lightning", "distributed.yaml"): ("single", 1, "validation_accuracy"),
    ("digits_huggingface", "const.yaml"): ("single", 1, "eval_accuracy"),
}


def test_every_example_config_is_listed_here() -> None:
    assert {(path.parent.name, path.name) for path in CONFIGS} == set(EXPECTED)


@pytest.mark.parametrize("path", CONFIGS, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_example_config_is_valid_for_its_directory(path: Path) -> None:
    config = load_config_file(path)
    files = {
        str(file.relative_to(path.parent)) for file in path.parent.rglob("*") if file.is_file()
    }
    validate_context(config, files)

    searcher = config.searcher_dict()
    name, trials, metric = EXPECTED[(path.parent.name, path.name)]
    assert (searcher["name"], searcher["max_trials"], searcher["metric"]) == (name, trials, metric)
