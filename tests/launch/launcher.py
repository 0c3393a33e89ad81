"""What the launcher tests share: a script file, a clean environment, running a launcher,
and reading its output by rank."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

# Variables a launcher sets for its ranks: a test starts from an environment without them.
LAUNCHER_SET = ("SHIPYARD_", "TF_", "OMPI_", "PMIX_")


def script(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def env_of(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(LAUNCHER_SET)}
    env.pop("CUDA_VISIBLE_DEVICES", None)
    env.pop("GRPC_FAIL_FAST", None)
    # "python3" is this venv's, as in a trial (the master puts its bin dir first on PATH)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env.update(extra)
    return env


def run_launcher(
    module: str, args: list[str], env: dict[str, str], timeout: float = 60, cwd: Path | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
    )


def by_rank(stdout: str) -> dict[int, list[str]]:
    lines: dict[int, list[str]] = {}
    for line in stdout.splitlines():
        match = re.match(r"^\[rank=(\d+)\] (.*)$", line)
        if match:
            lines.setdefault(int(match.group(1)), []).append(match.group(2))
        else:
            assert line.startswith("[launcher] "), line  # nothing unprefixed
    return lines


def rank_env(lines: list[str]) -> dict[str, str]:
    return dict(line.split("=", 1) for line in lines if "=" in line)
