"""`shipyard up` / `status` / `down` against a real master process on a free port."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket

import httpx
import pytest

from shipyard.client import credentials
from tests.fixtures.plain_http import NO_TLS
from tests.fixtures.poll import poll

pytestmark = pytest.mark.slow


@pytest.fixture
def stop_leftover_master(private_home):
    """If a test fails half-way, stop the master it started (by the pid it recorded)."""
    yield
    record = private_home / "master.json"
    if record.exists():
        with contextlib.suppress(ProcessLookupError, ValueError, KeyError):
            os.kill(json.loads(record.read_text())["pid"], signal.SIGKILL)


def login_link(output: str, url: str) -> str:
    match = re.search(r"^Web UI: (\S+) \(single use", output, re.M)
    assert match, output
    assert match.group(1).startswith(f"{url}/login?ticket=")
    return match.group(1)


def assert_link_logs_in_once(link: str) -> None:
    """The first visit gets the web UI's session cookie; a second one is sent to log in."""
    first = httpx.get(link, follow_redirects=False, verify=NO_TLS)
    assert first.status_code == 303 and first.headers["location"] == "/"
    assert first.cookies.get("shipyard_session")
    second = httpx.get(link, follow_redirects=False, verify=NO_TLS)
    assert second.status_code == 303 and second.headers["location"] == "/login?expired=1"
    assert "shipyard_session" not in second.cookies


def test_up_status_down(shipyard, free_port, private_home, stop_leftover_master):
    started = shipyard("up", "--port", free_port, "--slots", "2")
    assert started.exit_code == 0, started.output
    url = f"http://127.0.0.1:{free_port}"
    assert f"running at {url}" in started.stdout
    record = json.loads((private_home / "master.json").read_text())
    assert record["url"] == url and record["port"] == free_port

    # The first admin's one-time password, shown once (its file is gone), logs in.
    admin = re.search(
        r"^Cluster admin: (\S+), one-time password: (\S+) \(shown once; change it with "
        r"`shipyard user change-password`\)$",
        started.stdout,
        re.M,
    )
    assert admin, started.stdout
    assert not (private_home / "admin-password").exists()
    login = httpx.post(
        f"{url}/api/v1/auth/login",
        json={"username": admin.group(1), "password": admin.group(2)},
        verify=NO_TLS,
    )
    assert login.status_code == 200, login.text
    assert_link_logs_in_once(login_link(started.stdout, url))

    again = shipyard("up", "--port", free_port)
    assert again.exit_code == 0
    assert "already answers" in again.stdout
    assert "one-time password" not in again.stdout
    assert_link_logs_in_once(login_link(again.stdout, url))  # a fresh one

    status = shipyard("status", "--json")
    assert status.exit_code == 0, status.output
    info = json.loads(status.stdout)
    assert info["url"] == url
    assert [slot["id"] for slot in info["slots"]] == ["cpu0", "cpu1"]

    stopped = shipyard("down")
    assert stopped.exit_code == 0
    assert f"stopped the master (pid {record['pid']})" in stopped.stdout
    assert not (private_home / "master.json").exists()
    assert shipyard("status").exit_code == 1


def test_up_on_a_busy_port_shows_why_the_master_stopped(shipyard, private_home):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = shipyard("up", "--port", port)
    assert result.exit_code == 1
    assert "the master exited" in result.stderr
    assert "master.log" in result.stderr
    assert "already in use" in result.stderr
    assert not (private_home / "master.json").exists()


def test_up_foreground_is_the_master_process_itself(free_port, private_home):
    """For service managers: the process they start is the master (exec), and SIGTERM
    stops it cleanly."""
    import subprocess
    import sys

    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "shipyard.cli.main",
            "up",
            "--foreground",
            "--port",
            str(free_port),
            "--slots",
            "1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{free_port}"
    try:

        def master_info() -> dict:
            assert proc.poll() is None, proc.stdout.read().decode()
            # The token the master keeps for its local user in its home (laptop mode).
            kept = credentials.entry(url, private_home) or {}
            headers = {"Authorization": f"Bearer {kept.get('token')}"}
            return httpx.get(
                f"{url}/api/v1/master", headers=headers, timeout=2, verify=NO_TLS
            ).json()

        info = poll(
            master_info,
            "the master to answer",
            timeout_s=60,
            every_s=0.1,
            ignore=(httpx.TransportError,),
        )
        assert info["home"] == str(private_home)  # SHIPYARD_HOME is honoured
        record = json.loads((private_home / "master.json").read_text())
        assert record["pid"] == proc.pid
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
    assert code in (0, -signal.SIGTERM)  # uvicorn re-raises the signal after its clean shutdown
