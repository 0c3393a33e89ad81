"""Run an example's train.py the way a user tries it on a laptop: no master (local mode)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# What local mode prints, e.g. "[shipyard] training steps=10 loss=0.5".
REPORT_LINE = re.compile(r"^\[shipyard\] (training|validation) steps=(\d+) (.*)$")
CHECKPOINT_LINE = re.compile(r"^\[shipyard\] checkpoint (\S+) stored \(steps=(\d+)\)$")


@dataclass
class LocalRun:
    returncode: int
    output: str
    # group -> list of (steps_completed, metrics), in the order printed
    reports: dict[str, list[tuple[int, dict[str, float]]]] = field(default_factory=dict)
    checkpoints: list[tuple[str, int]] = field(default_factory=list)  # (uuid, steps)

    def steps(self, group: str) -> list[int]:
        return [step for step, _ in self.reports.get(group, [])]

    def values(self, group: str, metric: str) -> list[float]:
        return [metrics[metric] for _, metrics in self.reports.get(group, [])]


def run_example(
    example: str,
    workdir: Path,
    *,
    hparams: dict,
    max_length: int,
    latest_checkpoint: str | None = None,
    timeout_s: float = 240,
) -> LocalRun:
    """Run examples/<example>/train.py in ``workdir`` (checkpoints land in workdir/checkpoints)."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("SHIPYARD_")}
    env["SHIPYARD_HPARAMS"] = json.dumps(hparams)
    env["SHIPYARD_SEARCHER_MAX_LENGTH"] = str(max_length)
    if latest_checkpoint:
        env["SHIPYARD_LATEST_CHECKPOINT"] = latest_checkpoint
    completed = subprocess.run(
        [sys.executable, str(EXAMPLES / example / "train.py")],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    run = LocalRun(completed.returncode, completed.stdout + completed.stderr)
    for line in completed.stdout.splitlines():
        if match := REPORT_LINE.match(line):
            group, step, rest = match.groups()
            metrics = dict(pair.split("=", 1) for pair in rest.split())
            parsed = {name: float(value) for name, value in metrics.items()}
            run.reports.setdefault(group, []).append((int(step), parsed))
        elif match := CHECKPOINT_LINE.match(line):
            run.checkpoints.append((match.group(1), int(match.group(2))))
    return run
