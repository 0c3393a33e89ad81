"""Fixtures for the framework integrations' tests."""

from __future__ import annotations

import os

import pytest

# What a launcher (ours, torchrun) sets: a test process must not look like one of its ranks.
LAUNCHER_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK")


@pytest.fixture
def local_trial(monkeypatch, tmp_path):
    """A trial in local mode (no master, one process) working in tmp_path: its checkpoints
    go to tmp_path/checkpoints."""
    for name in list(os.environ):
        if name.startswith("SHIPYARD_") or name in LAUNCHER_VARS:
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    return tmp_path
