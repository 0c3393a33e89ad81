"""Helpers for running training scripts the way a user does: in their own process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def no_master(monkeypatch):
    """Every test here runs in local mode unless it sets the variables itself."""
    for name in list(os.environ):
        if name.startswith("SHIPYARD_"):
            monkeypatch.delenv(name)


def run_script(
    directory: Path, source: str, *, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Write ``source`` to ``directory/train.py`` and run it there with this interpreter."""
    script = directory / "train.py"
    script.write_text(source)
    clean_env = {k: v for k, v in os.environ.items() if not k.startswith("SHIPYARD_")}
    clean_env.update(env or {})
    return subprocess.run(
        [sys.executable, str(script)],
        cwd=directory,
        env=clean_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
