"""The installed `shipyard` command builds only the command group its arguments name: what a
user sees (help, the command's work, errors) must be what the whole command tree gives."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SHIPYARD = Path(sys.executable).parent / "shipyard"
ALL_GROUPS = ["experiment", "trial", "job", "checkpoint", "user", "workspace", "secret", "role"]


def run(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "200"}
    env.pop("SHIPYARD_MASTER", None)
    return subprocess.run(
        [str(SHIPYARD), *args], capture_output=True, text=True, env=env, timeout=60
    )


def test_the_root_help_lists_every_group():
    result = run("--help")
    assert result.returncode == 0, result.stderr
    for group in [*ALL_GROUPS, "up", "down", "status", "preview-search"]:
        assert f" {group} " in result.stdout, group


def test_a_groups_help_after_a_valued_root_option(free_port):
    for master in (["-m", f"http://127.0.0.1:{free_port}"], [f"--master=http://x:{free_port}"]):
        result = run(*master, "experiment", "--help")
        assert result.returncode == 0, result.stderr
        assert "Usage: shipyard experiment" in result.stdout
        for command in ("create", "list", "describe", "wait", "kill"):
            assert f" {command} " in result.stdout, command


def test_a_command_runs_with_the_master_option_before_its_group(free_port):
    url = f"http://127.0.0.1:{free_port}"
    result = run("--master", url, "experiment", "list")
    assert result.returncode == 1
    assert f"cannot reach the Shipyard master at {url}" in result.stderr
    assert "Traceback" not in result.stderr


def test_unknown_commands_are_refused_at_the_root_and_in_a_group():
    root = run("nosuch")
    assert root.returncode == 2 and "No such command 'nosuch'" in root.stderr
    inner = run("trial", "nosuch")
    assert inner.returncode == 2 and "No such command 'nosuch'" in inner.stderr


def test_determined_style_aliases_reach_their_groups(free_port):
    """`shipyard e list`, `shipyard t logs`: the alias names the group the command builds."""
    url = f"http://127.0.0.1:{free_port}"
    listed = run("-m", url, "e", "list")
    assert listed.returncode == 1 and f"cannot reach the Shipyard master at {url}" in listed.stderr
    helped = run("t", "logs", "--help")
    assert helped.returncode == 0 and "--tail" in helped.stdout and "--grep" in helped.stdout
