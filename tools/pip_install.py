"""`pip install ARGS` into this interpreter's venv, done by uv when it can be had.

Why: `make setup`'s pip step installs about 200 distributions (torch, TensorFlow, Ray: 3.7 GB
in the venv). pip takes nearly three minutes for it, most of a fresh clone's setup; uv
resolves the same set and installs it in about 15 s.

uv does not read pip's configuration, and this machine's pip finds some packages only
through it (torch's CPU build in a local folder of wheels, local indexes, a constraint
file). So the settings pip would use, from its files and PIP_* variables as `pip config list`
prints them, are handed to uv as flags, ordered so that uv picks the files pip picks (see
pip_settings). Where uv cannot be installed or fails, pip runs as before: nothing is lost
but time.

Usage: python tools/pip_install.py [pip install arguments: -c, -r, -e, requirements]
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

# pip's settings that change what gets installed.
SETTINGS = ("index-url", "extra-index-url", "find-links", "constraint")
PYPI = "https://pypi.org/simple"  # pip's index when its configuration names none


def pip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pip", *args], text=True, capture_output=True)


def pip_settings() -> tuple[list[str], dict[str, str]]:
    """uv's flags and environment for pip's settings. `pip config list` prints lines such as
    `global.find-links='/opt/wheels'` or `:env:.constraint='a.txt b.txt'` (a variable)."""
    # Ordered sets: a variable often repeats what a file says.
    found: dict[str, dict[str, None]] = {name: {} for name in SETTINGS}
    env = dict(os.environ)
    for line in pip("config", "list").stdout.splitlines():
        key, _, value = line.partition("=")
        section, _, name = key.rpartition(".")
        value = value.strip("'\"")
        if section not in ("global", "install", ":env:"):
            continue
        if name == "cert":  # uv trusts the same CA bundle through the variable it reads
            env.setdefault("SSL_CERT_FILE", value)
        elif name in found:
            found[name].update(dict.fromkeys(value.split()))
    # pip takes the best file of a version over all its indexes; uv takes a version's files
    # from the first index that has the version, and the extra indexes come first. So the
    # main index goes first too: a version's files come from it, and the extra indexes add
    # only what it lacks (a partial mirror among them held only the pure-Python wheel of
    # tensorboard-data-server, without the server TensorBoard runs).
    main_index = list(found["index-url"])[-1] if found["index-url"] else PYPI
    flags = ["--index-url", main_index]
    for url in [main_index, *found["extra-index-url"]]:
        flags += ["--extra-index-url", url]
    for name in ("find-links", "constraint"):
        for item in found[name]:
            flags += [f"--{name}", item]
    return flags, env


def uv() -> str | None:
    """The venv's uv, installed into it first if need be; None when that fails."""
    path = Path(sys.executable).with_name("uv")
    if not path.exists():
        pip("install", "--quiet", "uv")
    return str(path) if path.exists() else None


def main(args: list[str]) -> int:
    uv_path = uv()
    if uv_path is not None:
        command = [uv_path, "pip", "install", "--quiet", "--python", sys.executable]
        flags, env = pip_settings()
        command += ["--index-strategy", "unsafe-best-match", *flags, *args]
        if subprocess.run(command, env=env).returncode == 0:
            return 0
        print("tools/pip_install.py: uv failed (above); installing with pip", file=sys.stderr)
    else:
        print("tools/pip_install.py: uv could not be installed; using pip", file=sys.stderr)
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-compile", *args]
    return subprocess.run(command).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
