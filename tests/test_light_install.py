"""`pip install shipyard` with no extra: the light install a training image gets
(docs/install.md). The wheel is built with the docs' command and installed as their
Dockerfile installs it, in a fresh venv without the system's site-packages. That venv must
hold none of the master's packages, yet import the trial side and the SDK, run the CLI,
refuse `shipyard up` in one line that says what to install, and run a trial and a launcher
in local mode (no master).

About 25 s on a busy 2-core machine, most of it pip: building the wheel, then resolving and
unpacking the package's few dependencies (through the machine's configured index, from
pip's cache once it has them); then the first imports, which compile their bytecode."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.doc_blocks import block_with

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "install.md"
# pyproject.toml's server extra and what its packages bring: none belongs in a training image.
SERVER_DISTRIBUTIONS = {
    "fastapi",
    "starlette",
    "uvicorn",
    "uvloop",
    "httptools",
    "sqlalchemy",
    "alembic",
    "pydantic-settings",
    "argon2-cffi",
    "cryptography",
}

# Each command group's --help and each root command's, in one process (a process each
# would add half a second each).
EVERY_GROUP_HELP = """
from typer.testing import CliRunner
from shipyard.cli.main import app

names = [g.name for g in app.registered_groups] + [c.name for c in app.registered_commands]
for name in names:
    result = CliRunner().invoke(app, [name, "--help"])
    assert result.exit_code == 0, (name, result.output)
print(len(names))
"""


def documented_install() -> tuple[list[str], str]:
    """The docs' command that builds the wheel (after `pip`), and the wheel file that their
    Dockerfile installs."""
    [build] = [
        line.split("#")[0].split()[1:]
        for line in block_with(DOC, "pip wheel", "bash").splitlines()
        if line.startswith("pip wheel ")
    ]
    dockerfile = block_with(DOC, "FROM ", "dockerfile")
    found = re.search(r"^RUN pip install --no-cache-dir /tmp/(\S+\.whl)$", dockerfile, re.M)
    assert found, dockerfile
    return build, found.group(1)


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the package installed as docs/install.md's Dockerfile does."""
    root = tmp_path_factory.mktemp("light-install")
    # The build runs in a copy of what the wheel is made of: setuptools leaves build/ in the
    # tree it builds, whose stale files would end up in later wheels.
    source = root / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    shutil.copytree(REPO / "src", source / "src", ignore=ignore)
    build, wheel_name = documented_install()
    # Built by this venv's setuptools (pyproject's build-system asks only for >= 65): an
    # isolated build environment, installed anew each time, took 5 s more.
    built = subprocess.run(
        [sys.executable, "-m", "pip", *build, "--no-build-isolation"],
        cwd=source,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    wheel_dir = source / build[build.index("--wheel-dir") + 1]
    made = sorted(path.name for path in wheel_dir.iterdir())
    assert wheel_name in made, f"the docs' Dockerfile installs {wheel_name}, the build made {made}"
    wheel = wheel_dir / wheel_name
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    # This pip installs into the venv (--python), which so needs no pip of its own (4 s less).
    python = venv / "bin" / "python"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--python", python, "install", "--no-compile", wheel],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return venv


def run(
    venv: Path, *argv: str | Path, cwd: Path | None = None, **env: str
) -> subprocess.CompletedProcess:
    """A command of the venv, in an environment that names neither a master nor the checkout."""
    clean = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("SHIPYARD_") and name not in ("PYTHONPATH", "VIRTUAL_ENV")
    }
    clean["PATH"] = f"{venv / 'bin'}{os.pathsep}{clean.get('PATH', '')}"
    return subprocess.run(
        [str(venv / "bin" / argv[0]), *map(str, argv[1:])],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={**clean, **env},
    )


def test_it_installs_none_of_the_masters_packages(venv: Path) -> None:
    listed = run(
        venv,
        "python",
        "-c",
        "import importlib.metadata as m, json; "
        "print(json.dumps([d.metadata['Name'] for d in m.distributions()]))",
    )
    assert listed.returncode == 0, listed.stderr
    names = {re.sub(r"[-_.]+", "-", name).lower() for name in json.loads(listed.stdout)}
    assert "shipyard" in names
    assert not names & SERVER_DISTRIBUTIONS, sorted(names & SERVER_DISTRIBUTIONS)


def test_the_trial_side_and_the_sdk_import_from_the_installed_package(venv: Path) -> None:
    imported = run(
        venv,
        "python",
        "-c",
        "import shipyard, shipyard.core, shipyard.launch.masked, "
        "shipyard.launch.torch_distributed; from shipyard.client import Shipyard; "
        "print(shipyard.__file__)",
    )
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout.startswith(str(venv)), imported.stdout  # not the checkout's src/


def test_the_cli_and_every_groups_help(venv: Path) -> None:
    root = run(venv, "shipyard", "--help")
    assert root.returncode == 0, root.stderr
    assert " experiment " in root.stdout
    every = run(venv, "python", "-c", EVERY_GROUP_HELP)
    assert every.returncode == 0, every.stderr
    assert int(every.stdout) > 15


def test_shipyard_up_says_in_one_line_what_to_install(venv: Path, tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nothing listens on: no master answers there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    home = tmp_path / "home"
    result = run(venv, "shipyard", "up", "--port", str(port), "--home", home)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "error: shipyard up needs the master's packages (no fastapi here): "
        "pip install 'shipyard[server]'"
    ]
    assert not home.exists()  # refused before anything started
    server = run(venv, "python", "-m", "shipyard.server", "--home", home)
    assert server.returncode == 1
    assert server.stderr.strip().splitlines() == [
        "python -m shipyard.server needs the master's packages (no uvicorn here): "
        "pip install 'shipyard[server]'"
    ]


def test_a_trial_runs_in_local_mode(venv: Path, tmp_path: Path) -> None:
    """The README's first trial: examples/quadratic/train.py without a master."""
    trial = run(
        venv,
        "python",
        REPO / "examples" / "quadratic" / "train.py",
        cwd=tmp_path,
        SHIPYARD_HPARAMS='{"lr": 0.1, "target": 3.0}',
        SHIPYARD_SEARCHER_MAX_LENGTH="30",
    )
    assert trial.returncode == 0, trial.stdout + trial.stderr
    assert "[shipyard] validation steps=30 " in trial.stdout
    assert len(list((tmp_path / "checkpoints").glob("*/metadata.json"))) == 2  # steps 25, 30


def test_a_launcher_runs_its_ranks_in_local_mode(venv: Path) -> None:
    rank = (
        "import os, shipyard.core; "
        "print('rank', os.environ['RANK'], 'of', os.environ['WORLD_SIZE'])"
    )
    launcher = ["-m", "shipyard.launch.torch_distributed", "--nproc", "2", "--"]
    launched = run(venv, "python", *launcher, venv / "bin" / "python", "-c", rank)
    assert launched.returncode == 0, launched.stdout + launched.stderr
    assert "rank 0 of 2" in launched.stdout and "rank 1 of 2" in launched.stdout
    # The master's wrapper of a trial that has secrets: its printed value is masked.
    masker = ["-m", "shipyard.launch.masked", "python", "-c", "print('key=hunter22')"]
    masked = run(venv, "python", *masker, SHIPYARD_MASK_ENV="KEY", KEY="hunter22")
    assert masked.returncode == 0, masked.stderr
    assert masked.stdout.strip() == "key=********"
