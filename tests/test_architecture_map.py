"""docs/architecture.md opens with the map of the code; the map must name what exists.

Every module or folder the map's sections name (in backticks, relative to src/shipyard) is
there, every package of src/shipyard has its row, and the README leads to the map."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "src" / "shipyard"
ARCHITECTURE = REPO / "docs" / "architecture.md"


def map_text() -> str:
    """The page up to the decision log: the map, the interfaces, where to start reading."""
    text = ARCHITECTURE.read_text()
    assert "# The decision log" in text, "architecture.md lost its decision-log heading"
    return text.split("# The decision log", 1)[0]


def named_paths(text: str) -> set[tuple[str, str]]:
    """(row package, path) for every code span that is a path of the package: a .py file or
    a folder with a trailing slash. In a row of the package table (``| `server/` | ...``) a
    bare name (`orm.py`, `config/`) is that package's."""
    found = set()
    for line in text.splitlines():
        row = re.match(r"\| `([a-z_/]+)/` \|", line)
        base = row.group(1) if row else ""
        for span in re.findall(r"`([^`\s]+)`", line):
            if re.fullmatch(r"[a-z_]+(/[a-z_]+)*(\.py|/)", span):
                found.add((base, span))
    return found


def exists(base: str, path: str) -> bool:
    candidates = [REPO / path, PACKAGE / path] + ([PACKAGE / base / path] if base else [])
    return any(c.exists() for c in candidates)


def test_every_path_the_map_names_exists() -> None:
    paths = named_paths(map_text())
    assert len(paths) > 40, sorted(paths)  # the map names modules, not only packages
    missing = sorted(path for base, path in paths if not exists(base, path))
    assert not missing, f"architecture.md's map names modules that do not exist: {missing}"


def test_every_package_has_a_row_in_the_map() -> None:
    packages = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    rows = set(re.findall(r"^\| `([a-z_]+)/` \|", map_text(), flags=re.M))
    assert packages <= rows, f"packages without a row in the map: {sorted(packages - rows)}"


def test_the_readme_leads_to_the_map_and_the_operations_guide() -> None:
    readme = (REPO / "README.md").read_text()
    assert "(docs/architecture.md)" in readme
    assert "(docs/operations.md)" in readme
