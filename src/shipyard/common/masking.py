"""Masking secret values in a trial's output: each value, in the forms it commonly takes
when printed, becomes ******** as the output streams through, also when a value is split
across two writes. Standard library only: the trial-side wrapper (shipyard.launch.masked)
imports it.

The forms of a value: as it is; URL-encoded (quote, with and without "/" kept, and
quote_plus); JSON-escaped (json.dumps without its quotes, ASCII and UTF-8); base64
(standard and URL-safe). Base64 of a value inside longer data depends on where the value
starts modulo 3, so each of the three alignments gives the part of its encoding that only
the value decides (whole 4-character groups), plus the encoding of the value alone, with
and without padding. At the edges of a value encoded inside longer data, up to two bytes'
worth of characters stay visible.

A form shorter than MIN_FORM bytes is not masked: it would hide ordinary text."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from urllib.parse import quote, quote_plus

MASK = b"********"
MIN_FORM = 6
# The environment variable that names, comma-separated, the variables holding secret
# values (the master sets it for the wrapper), and the one naming the directory of
# secret files (every file in it is a secret value too).
MASK_ENV = "SHIPYARD_MASK_ENV"
SECRETS_DIR_ENV = "SHIPYARD_SECRETS_DIR"


def masked_names(environ: Mapping[str, str]) -> set[str]:
    """The variables MASK_ENV names: those that hold secret values."""
    return {n.strip() for n in environ.get(MASK_ENV, "").split(",") if n.strip()}


def values_from_env(environ: Mapping[str, str]) -> list[str]:
    """The secret values a run holds: those of the variables named in MASK_ENV and the
    contents of the files under SECRETS_DIR_ENV."""
    values = [environ[n] for n in sorted(masked_names(environ)) if environ.get(n)]
    directory = environ.get(SECRETS_DIR_ENV)
    if directory:
        for path in sorted(Path(directory).rglob("*")):
            if path.is_file():
                values.append(path.read_bytes().decode("utf-8", errors="replace"))
    return values


def forms(value: str) -> set[bytes]:
    """Every form of the value that is masked, as bytes (UTF-8)."""
    raw = value.encode("utf-8", errors="surrogateescape")
    texts = {
        quote(value, safe=""),
        quote(value),
        quote_plus(value),
        json.dumps(value)[1:-1],
        json.dumps(value, ensure_ascii=False)[1:-1],
    }
    found = {raw, *(t.encode("utf-8", errors="surrogateescape") for t in texts)}
    found |= _base64_forms(raw)
    return {f for f in found if len(f) >= MIN_FORM}


def _base64_forms(raw: bytes) -> set[bytes]:
    found: set[bytes] = set()
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        whole = encode(raw)
        found |= {whole, whole.rstrip(b"=")}
        for shift in range(3):
            encoded = encode(bytes(shift) + raw)
            # The first group mixes in the bytes before the value, a last partial group
            # the bytes after it: only the groups in between are the value's own.
            start = 4 if shift else 0
            end = (shift + len(raw)) // 3 * 4
            if end > start:
                found.add(encoded[start:end])
    return found


class Masker:
    """Masks the values in a stream fed in chunks. What may be the start of a form is held
    back until the next chunk tells (or `flush`), so a value split across two writes is
    still masked; anything else goes out at once, so output is not delayed."""

    def __init__(self, values: Iterable[str]) -> None:
        # A value read from a file often ends with a newline its user strips before printing.
        wanted = {v for value in values for v in (value, value.strip()) if v}
        every = {f for value in wanted for f in forms(value)}
        # Longest first: at one position the regex takes the first alternative that matches.
        self._forms = sorted(every, key=len, reverse=True)
        self._longest = len(self._forms[0]) if self._forms else 0
        self._first_bytes = {f[0] for f in self._forms}
        self._pattern = (
            re.compile(b"|".join(re.escape(f) for f in self._forms)) if self._forms else None
        )
        self._carry = b""

    def __bool__(self) -> bool:
        return self._pattern is not None

    def mask(self, data: bytes) -> bytes:
        """The whole of `data` masked, independent of the stream (for whole lines)."""
        return self._pattern.sub(MASK, data) if self._pattern is not None else data

    def feed(self, data: bytes) -> bytes:
        """What of the stream can go out now, masked."""
        if self._pattern is None:
            return data
        buf = self._carry + data
        hold = self._held_from(buf)
        out, pos = [], 0
        for match in self._pattern.finditer(buf):
            if match.start() >= hold:
                break  # it may be the start of a longer form: wait for more
            out += [buf[pos : match.start()], MASK]
            pos = match.end()
        end = max(pos, hold)
        out.append(buf[pos:end])
        self._carry = buf[end:]
        return b"".join(out)

    def flush(self) -> bytes:
        """The rest of the stream (it has ended), masked."""
        rest, self._carry = self._carry, b""
        return self.mask(rest)

    def _held_from(self, buf: bytes) -> int:
        """The first position from which the rest of buf is the beginning (not the whole)
        of a form; len(buf) when there is none."""
        for pos in range(max(0, len(buf) - self._longest + 1), len(buf)):
            if buf[pos] not in self._first_bytes:
                continue
            tail = buf[pos:]
            if any(len(f) > len(tail) and f.startswith(tail) for f in self._forms):
                return pos
        return len(buf)
