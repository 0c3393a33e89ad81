"""The training script in docs/core-api.md runs as printed, and resumes from its checkpoint."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.core.conftest import run_script

DOC = Path(__file__).resolve().parents[2] / "docs" / "core-api.md"


def first_python_block() -> str:
    match = re.search(r"```python\n(.*?)```", DOC.read_text(), re.DOTALL)
    assert match, f"no ```python block in {DOC}"
    return match.group(1)


def test_doc_example_runs_in_local_mode_and_resumes(tmp_path):
    source = first_python_block()

    first = run_script(tmp_path, source)

    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert lines[0] == "[shipyard] training steps=1 loss=5.76"
    assert "[shipyard] progress 100.0%" in lines
    assert sum(line.startswith("[shipyard] validation steps=") for line in lines) == 4
    checkpoints = {
        path.name: json.loads((path / "metadata.json").read_text())
        for path in (tmp_path / "checkpoints").iterdir()
    }
    assert sorted(m["steps_completed"] for m in checkpoints.values()) == [50, 100, 150, 200]

    # A restart: the master would pass the latest checkpoint and a longer target length.
    latest = next(u for u, m in checkpoints.items() if m["steps_completed"] == 200)
    env = {"SHIPYARD_LATEST_CHECKPOINT": latest, "SHIPYARD_SEARCHER_MAX_LENGTH": "250"}
    second = run_script(tmp_path, source, env=env)

    assert second.returncode == 0, second.stderr
    training = [line for line in second.stdout.splitlines() if "training" in line]
    assert training[0].startswith("[shipyard] training steps=201 ")
    assert training[-1].startswith("[shipyard] training steps=250 ")
