"""How many of Determined's own experiment configs Shipyard accepts.

    python bench/determined_configs.py PATH [--details]

PATH is a Determined checkout (a directory) or a bare git directory (read at HEAD with
`git show`, e.g. /work/.mirror/determined-ai+determined/repo). Every examples/**/*.yaml and
e2e_tests/tests/fixtures/**/*.yaml that is an experiment config (a YAML mapping with a
`searcher`) goes through the same validation as `shipyard config validate` (load_config),
and is counted accepted, refused (a ShipyardError, with its reason) or crashed (anything
else: a bug). Prints one JSON object; --details adds each file's outcome.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
from collections import Counter
from pathlib import Path, PurePosixPath

import yaml

from shipyard.common.config import load_config
from shipyard.common.config.entrypoint import TRIAL_CLASS
from shipyard.common.errors import ShipyardError

ROOTS = ("examples/", "e2e_tests/tests/fixtures/")
SUFFIXES = (".yaml", ".yml")


class Checkout:
    """Read files from a working tree or from a bare repository's HEAD."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.bare = not (path / ".git").exists() and (path / "HEAD").is_file()

    def _git(self, *args: str) -> str:
        return subprocess.run(
            ["git", "--git-dir", str(self.path), *args],
            check=True,
            capture_output=True,
            text=True,
        ).stdout

    def files(self) -> list[str]:
        if self.bare:
            names = self._git("ls-tree", "-r", "--name-only", "HEAD").splitlines()
        else:
            names = [str(p.relative_to(self.path)) for p in self.path.rglob("*") if p.is_file()]
        return sorted(n for n in names if n.startswith(ROOTS) and n.endswith(SUFFIXES))

    def read(self, name: str) -> str:
        if self.bare:
            return self._git("show", f"HEAD:{name}")
        return (self.path / name).read_text(encoding="utf-8")

    def revision(self) -> str | None:
        try:
            if self.bare:
                return self._git("rev-parse", "HEAD").strip()
            return subprocess.run(
                ["git", "-C", str(self.path), "rev-parse", "HEAD"],
                check=True,
                capture_output=True,
                text=True,
            ).stdout.strip()
        except subprocess.CalledProcessError:
            return None


def experiment_config(text: str) -> dict | None:
    """The config as data when it is an experiment config (a mapping with a searcher)."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    return data if isinstance(data, dict) and "searcher" in data else None


def kind_of(data: dict) -> str:
    """What the issue expects to stay refused: the legacy Trial API and proxy ports."""
    entry = data.get("entrypoint")
    try:
        argv = shlex.split(entry) if isinstance(entry, str) else list(entry or [])
    except ValueError:
        argv = []
    # Determined's Trial API names a class, `model_def:MyTrial`, alone or after a launcher's
    # `--trial` (determined.launch.deepspeed --trial gpt2_trial:GPT2Trial).
    if any(isinstance(a, str) and TRIAL_CLASS.match(a) for a in argv):
        return "legacy Trial API"
    environment = data.get("environment")
    if isinstance(environment, dict) and environment.get("proxy_ports"):
        return "proxy ports"
    return "other"


def reason_of(exc: ShipyardError) -> str:
    """Every problem as the user reads it: `path: message`, joined by ' | '."""
    if not exc.details:
        return exc.message
    return " | ".join(f"{d.get('path') or '<config>'}: {d.get('message')}" for d in exc.details)


def check(name: str, text: str, kind: str) -> dict:
    out = {"file": name, "kind": kind}
    try:
        load_config(text, PurePosixPath(name).name)
    except ShipyardError as exc:
        return {**out, "outcome": "refused", "reason": reason_of(exc)}
    except Exception as exc:  # a crash is what this measures
        return {**out, "outcome": "crashed", "reason": f"{type(exc).__name__}: {exc}"}
    return {**out, "outcome": "accepted"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", type=Path)
    parser.add_argument("--details", action="store_true", help="add each file's outcome")
    args = parser.parse_args()
    repo = Checkout(args.checkout)
    results = []
    for name in repo.files():
        text = repo.read(name)
        data = experiment_config(text)
        if data is not None:
            results.append(check(name, text, kind_of(data)))
    outcomes = Counter(r["outcome"] for r in results)
    refused = [r for r in results if r["outcome"] == "refused"]
    out: dict[str, object] = {
        "benchmark": "determined_configs",
        "what": "Determined example and e2e fixture experiment configs, shipyard config validate",
        "revision": repo.revision(),
        "configs": len(results),
        "accepted": outcomes["accepted"],
        "refused": outcomes["refused"],
        "crashed": outcomes["crashed"],
        # By what the config is: "other" is what should all be accepted.
        "by_kind": {
            kind: dict(Counter(r["outcome"] for r in results if r["kind"] == kind))
            for kind in sorted({r["kind"] for r in results})
        },
        "refusals": {r["file"]: r["reason"] for r in refused},
        "crashes": {r["file"]: r["reason"] for r in results if r["outcome"] == "crashed"},
    }
    if args.details:
        out["details"] = results
    json.dump(out, sys.stdout, indent=None)
    print()


if __name__ == "__main__":
    main()
