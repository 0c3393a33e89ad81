"""Code blocks of a Markdown doc, so tests run what the docs show."""

from __future__ import annotations

import re
from pathlib import Path


def blocks(doc: Path, info: str = "yaml") -> list[str]:
    """Every fenced block whose info string is ``info``, in order."""
    return re.findall(rf"```{re.escape(info)}\n(.*?)```", doc.read_text(), flags=re.S)


def block_with(doc: Path, needle: str, info: str = "yaml") -> str:
    """The first ``info`` block of the doc that holds ``needle``."""
    found = [b for b in blocks(doc, info) if needle in b]
    assert found, f"{doc} has no {info} block with {needle!r}"
    return found[0]
