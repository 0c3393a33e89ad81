"""The CLI tests run with a private SHIPYARD_HOME and no master configured."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from shipyard.cli.main import app
from shipyard.common.ports import free_ports


@pytest.fixture(autouse=True)
def private_home(tmp_path, monkeypatch):
    home = tmp_path / "shipyard-home"
    monkeypatch.setenv("SHIPYARD_HOME", str(home))
    monkeypatch.delenv("SHIPYARD_MASTER", raising=False)
    return home


@pytest.fixture
def free_port() -> int:
    """A port nothing listens on (bound and released by the OS just now)."""
    (port,) = free_ports(1, "127.0.0.1")
    return port


@pytest.fixture
def shipyard():
    """Run `shipyard ARGS...` in-process; returns click's Result (stdout, stderr, exit_code)."""
    runner = CliRunner()

    def run(*args: str):
        return runner.invoke(app, [str(arg) for arg in args])

    return run
