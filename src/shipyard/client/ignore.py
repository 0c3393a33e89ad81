"""`.shipyardignore`: gitignore patterns that keep files out of a context archive.

Matched by `pathspec`'s GitIgnoreSpec, which follows git's rules exactly: `name` (any
depth), `dir/` (directories only), `*.ext`, `**/x`, `dir/**`, `/anchored` or `a/b`
(relative to the context root), `!pattern` (re-include), `#` comments, `\\#` escapes. As in
git, a file inside an ignored directory cannot be re-included. A directory without a
`.shipyardignore` uses Determined's `.detignore` (same syntax), so a Determined project
uploads the same files.
"""

from __future__ import annotations

from pathlib import Path

from pathspec import GitIgnoreSpec

from shipyard.common.errors import InvalidRequest

IGNORE_FILE = ".shipyardignore"
DETERMINED_IGNORE_FILE = ".detignore"
IGNORE_FILES = (IGNORE_FILE, DETERMINED_IGNORE_FILE)  # the first one present is read
ALWAYS_IGNORED_DIRS = frozenset({".git", "__pycache__"})


def _bad_line(lines: list[str]) -> int | None:
    """The 1-based number of the first line pathspec refuses (for the message)."""
    for number, line in enumerate(lines, 1):
        try:
            GitIgnoreSpec.from_lines([line])
        except ValueError:
            return number
    return None


class IgnoreRules:
    def __init__(self, spec: GitIgnoreSpec | None = None, source: str | None = None) -> None:
        self.spec = spec
        self.source = source  # the file the rules came from, None without one

    @classmethod
    def from_text(cls, text: str, source: str = IGNORE_FILE) -> IgnoreRules:
        lines = text.splitlines()
        try:
            return cls(GitIgnoreSpec.from_lines(lines), source)
        except ValueError as exc:  # pathspec's GitIgnorePatternError
            raise InvalidRequest(f"{source}, line {_bad_line(lines)}: {exc}") from None

    @classmethod
    def for_directory(cls, root: Path) -> IgnoreRules:
        for name in IGNORE_FILES:
            path = root / name
            if path.is_file():
                return cls.from_text(path.read_text(encoding="utf-8", errors="replace"), name)
        return cls()

    def is_ignored(self, relative_path: str, *, is_dir: bool) -> bool:
        """Whether this '/'-separated path (relative to the context root) is left out.
        The last matching rule decides, as in git."""
        if is_dir and relative_path.rsplit("/", 1)[-1] in ALWAYS_IGNORED_DIRS:
            return True
        if self.spec is None:
            return False
        # A trailing slash is how pathspec tells a directory (for `dir/` patterns).
        return self.spec.match_file(relative_path + "/" if is_dir else relative_path)
