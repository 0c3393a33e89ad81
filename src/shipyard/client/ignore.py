"""`.shipyardignore`: gitignore-style patterns that keep files out of a context archive.

Supported: `name` (any depth), `dir/` (directories only), `*.ext`, `**/x`, `dir/**`,
`/anchored` or `a/b` (relative to the context root), `!pattern` (re-include), `#` comments.
As in git, a file inside an ignored directory cannot be re-included.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

IGNORE_FILE = ".shipyardignore"
ALWAYS_IGNORED_DIRS = frozenset({".git", "__pycache__"})


@dataclass(frozen=True)
class IgnoreRule:
    pattern: str
    regex: re.Pattern[str]
    negated: bool
    dir_only: bool


def _translate(glob: str) -> str:
    """A glob over '/'-separated paths as a regex: `*` and `?` stay within one component,
    `**/` spans any number of directories, a trailing `/**` anything below."""
    out = []
    i = 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        elif glob[i] == "[" and "]" in glob[i + 2 :]:
            end = glob.index("]", i + 2)
            body = glob[i + 1 : end]
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
            i = end + 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return "".join(out)


def parse_rule(line: str) -> IgnoreRule | None:
    text = line.strip()
    if not text or text.startswith("#"):
        return None
    negated = text.startswith("!")
    pattern = text[1:] if negated else text
    dir_only = pattern.endswith("/")
    pattern = pattern.rstrip("/")
    if not pattern:
        return None
    # A slash before the end anchors the pattern at the root; otherwise it matches at any depth.
    if "/" in pattern:
        pattern = pattern.lstrip("/")
    else:
        pattern = "**/" + pattern
    return IgnoreRule(text, re.compile(_translate(pattern)), negated, dir_only)


class IgnoreRules:
    def __init__(self, rules: list[IgnoreRule]) -> None:
        self.rules = rules

    @classmethod
    def from_text(cls, text: str) -> IgnoreRules:
        return cls([rule for line in text.splitlines() if (rule := parse_rule(line))])

    @classmethod
    def for_directory(cls, root: Path) -> IgnoreRules:
        path = root / IGNORE_FILE
        return cls.from_text(path.read_text()) if path.is_file() else cls([])

    def is_ignored(self, relative_path: str, *, is_dir: bool) -> bool:
        """Whether this '/'-separated path (relative to the context root) is left out.
        The last matching rule decides, as in git."""
        if is_dir and relative_path.rsplit("/", 1)[-1] in ALWAYS_IGNORED_DIRS:
            return True
        ignored = False
        for rule in self.rules:
            if rule.dir_only and not is_dir:
                continue
            if rule.regex.fullmatch(relative_path):
                ignored = not rule.negated
        return ignored
