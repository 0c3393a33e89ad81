"""`shipyard config validate` checks a config on this machine, no master needed."""

from __future__ import annotations

import json
import textwrap

GOOD = """\
name: mnist-const
entrypoint: python3 train.py --epochs 1
hyperparameters:
  lr: 0.01
  hidden: 64
searcher:
  name: single
  metric: validation_loss
  max_length:
    batches: 100
"""

# max_trials is on line 8.
BAD = """\
name: mnist-random
entrypoint: python3 train.py
hyperparameters:
  lr: 0.1
searcher:
  name: random
  metric: validation_loss
  max_trials: ten
"""


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_good_config_is_valid_with_a_summary(shipyard, tmp_path):
    config = write(tmp_path, "const.yaml", GOOD)
    result = shipyard("config", "validate", config)
    assert result.exit_code == 0, result.output
    assert f"{config} is valid" in result.stdout
    assert "searcher single" in result.stdout
    assert "1 trial" in result.stdout
    assert "python3 train.py --epochs 1" in result.stdout


def test_bad_config_reports_path_and_line(shipyard, tmp_path):
    config = write(tmp_path, "random.yaml", BAD)
    result = shipyard("config", "validate", config)
    assert result.exit_code == 1
    assert "searcher.max_trials" in result.stderr
    assert "line 8" in result.stderr
    assert "is valid" not in result.stdout
    assert "Traceback" not in result.output


def test_json_prints_only_the_normalized_config(shipyard, tmp_path):
    config = write(tmp_path, "const.yaml", GOOD)
    result = shipyard("config", "validate", config, "--json")
    assert result.exit_code == 0, result.output
    normalized = json.loads(result.stdout)
    assert normalized["searcher"]["metric"] == "validation_loss"


def test_context_without_the_entrypoint_script(shipyard, tmp_path):
    config = write(tmp_path, "const.yaml", GOOD)
    code = tmp_path / "code"
    code.mkdir()
    (code / "model.py").write_text("")
    result = shipyard("config", "validate", config, "--context", code)
    assert result.exit_code == 1
    assert "entrypoint" in result.stderr
    assert "train.py" in result.stderr
    (code / "train.py").write_text("")
    assert shipyard("config", "validate", config, "--context", code).exit_code == 0


def test_missing_file(shipyard, tmp_path):
    result = shipyard("config", "validate", tmp_path / "nope.yaml")
    assert result.exit_code == 1
    assert "does not exist" in result.stderr
