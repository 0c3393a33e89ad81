"""What an artifact may be: one set of rules, checked by the trial side (ctx.artifacts,
before anything is written) and by the master (on every artifact a trial records), and what
the master serves inline.

Standard library only: shipyard.core imports this module.
"""

from __future__ import annotations

import re
from typing import Any

KINDS = ("image", "text", "table", "file")
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
TEXT_TYPE = "text/plain"
TABLE_TYPES = ("application/json", "text/csv")
# The media types a browser may show in place: images it decodes and texts it never runs.
# Anything else (HTML, SVG, XML, JavaScript, PDF...) is served as an attachment: a trial
# must not be able to put a page that runs script on the master's origin.
INLINE_TYPES = frozenset((*IMAGE_TYPES, TEXT_TYPE, *TABLE_TYPES))
DEFAULT_MAX_BYTES = 64 * 2**20  # per artifact; SHIPYARD_ARTIFACT_MAX_BYTES changes it
MAX_STEPS = 2**63 - 1  # the column is a BIGINT

# A name is one path component of its storage key: no "/", not hidden, not "." or "..".
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,255}$"
_NAME = re.compile(NAME_PATTERN[1:-1])  # fullmatch: "$" would also match before a final "\n"
_MEDIA_TYPE = re.compile(r"[a-z0-9][a-z0-9!#$&^_.+-]{0,62}/[a-z0-9][a-z0-9!#$&^_.+-]{0,62}")


def name_refusal(name: Any) -> str | None:
    """Why ``name`` is not an artifact name; None when it is one."""
    if not isinstance(name, str):
        return f"artifact name must be a string, got {type(name).__name__} {name!r:.80}"
    if _NAME.fullmatch(name) is None:
        return (
            f"artifact name {name!r:.80} is not valid: it must match {NAME_PATTERN} (a letter "
            "or digit, then at most 255 letters, digits, '_', '.' or '-'; no '/')"
        )
    return None


def steps_refusal(steps: Any) -> str | None:
    """Why ``steps`` is not an artifact's steps_completed (None, or an int >= 0)."""
    if steps is None:
        return None
    if isinstance(steps, bool) or not isinstance(steps, int) or not 0 <= steps <= MAX_STEPS:
        return f"artifact steps_completed must be None or an int >= 0, got {steps!r:.80}"
    return None


def media_type_refusal(kind: Any, media_type: Any) -> str | None:
    """Why ``media_type`` does not fit an artifact of ``kind``; None when it does."""
    if kind not in KINDS:
        return f"artifact kind must be one of {', '.join(KINDS)}, got {kind!r:.40}"
    if not isinstance(media_type, str) or _MEDIA_TYPE.fullmatch(media_type) is None:
        return f"artifact media_type must be type/subtype in lower case, got {media_type!r:.80}"
    allowed = {"image": IMAGE_TYPES, "text": (TEXT_TYPE,), "table": TABLE_TYPES}.get(kind)
    if allowed is not None and media_type not in allowed:
        return f"an artifact of kind {kind} must be {' or '.join(allowed)}, not {media_type}"
    return None


def storage_key(trial_id: int, steps_completed: int | None, name: str) -> str:
    """Where an artifact is kept in its experiment's checkpoint storage."""
    step = "none" if steps_completed is None else str(steps_completed)
    return f"{trial_prefix(trial_id)}/{step}/{name}"


def trial_prefix(trial_id: int) -> str:
    """Every artifact of one trial is under this key (deleted with its experiment)."""
    return f"artifacts/trial-{int(trial_id)}"


def image_type(head: bytes) -> str | None:
    """The media type of an encoded image, from its first bytes (12 are enough): PNG,
    JPEG, GIF or WebP; None for anything else."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None
