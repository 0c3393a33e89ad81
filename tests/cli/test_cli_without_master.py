"""What the CLI does when no master is running: a one-line hint, exit 1, no traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def assert_master_unavailable(result, url):
    assert result.exit_code == 1
    assert f"cannot reach the Shipyard master at {url}" in result.stderr
    assert "shipyard up" in result.stderr
    assert "Traceback" not in result.output
    assert result.stdout == ""


def test_status_without_master(shipyard, free_port):
    url = f"http://127.0.0.1:{free_port}"
    assert_master_unavailable(shipyard("--master", url, "status"), url)


def test_describe_without_master_uses_the_environment(shipyard, free_port, monkeypatch):
    url = f"http://127.0.0.1:{free_port}"
    monkeypatch.setenv("SHIPYARD_MASTER", url)
    assert_master_unavailable(shipyard("experiment", "describe", "1"), url)


def test_master_json_written_by_up_is_where_the_cli_looks(shipyard, free_port, private_home):
    url = f"http://127.0.0.1:{free_port}"
    private_home.mkdir()
    (private_home / "master.json").write_text(json.dumps({"url": url, "pid": 1}))
    assert_master_unavailable(shipyard("experiment", "list"), url)


def test_installed_command_prints_no_traceback(free_port, private_home):
    """The real entry point, as a user runs it."""
    env = {**os.environ, "SHIPYARD_MASTER": f"127.0.0.1:{free_port}"}
    completed = subprocess.run(
        [str(Path(sys.executable).parent / "shipyard"), "status"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert completed.returncode == 1
    assert "shipyard up" in completed.stderr
    assert "Traceback" not in completed.stderr


def test_down_without_master(shipyard):
    result = shipyard("down")
    assert result.exit_code == 0
    assert "no master running" in result.stdout


def test_down_with_a_stale_record_removes_it(shipyard, private_home):
    exited = subprocess.Popen([sys.executable, "-c", "pass"])
    exited.wait()  # its pid now belongs to no process
    private_home.mkdir()
    record = private_home / "master.json"
    record.write_text(json.dumps({"url": "http://127.0.0.1:1", "pid": exited.pid}))
    result = shipyard("down")
    assert result.exit_code == 0
    assert "no master running" in result.stdout
    assert not record.exists()
