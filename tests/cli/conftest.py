"""The CLI tests run with a private SHIPYARD_HOME and no master configured."""

from __future__ import annotations

import socket

import pytest
from typer.testing import CliRunner

from shipyard.cli.main import app


@pytest.fixture(autouse=True)
def private_home(tmp_path, monkeypatch):
    home = tmp_path / "shipyard-home"
    monkeypatch.setenv("SHIPYARD_HOME", str(home))
    monkeypatch.delenv("SHIPYARD_MASTER", raising=False)
    return home


@pytest.fixture
def free_port() -> int:
    """A port nothing listens on (bound and released by the OS just now)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def shipyard():
    """Run `shipyard ARGS...` in-process; returns click's Result (stdout, stderr, exit_code)."""
    runner = CliRunner()

    def run(*args: str):
        return runner.invoke(app, [str(arg) for arg in args])

    return run
