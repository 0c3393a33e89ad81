"""The JSON-lines protocol between RayBackend (in the master) and its driver process.

A request is ``{"id": n, "op": name, "args": {...}}``; the answer ``{"id": n, "ok": true,
"result": ...}`` or ``{"id": n, "ok": false, "kind": "NotSupportedYet", "error": "..."}``.
The driver answers requests in any order (a launch waiting for its slots does not hold up
the polls); bytes travel as base64. The driver's first line is its answer to id 0: ready, or
why it could not connect.
"""

from __future__ import annotations

import base64
import json
from typing import Any

OPS = ("ping", "capacity", "launch", "poll", "terminate", "read_log", "release", "recover")
READY_ID = 0


def encode(message: dict[str, Any]) -> bytes:
    return (json.dumps(message, separators=(",", ":")) + "\n").encode()


def decode(line: bytes) -> dict[str, Any]:
    return json.loads(line)


def to_b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def from_b64(text: str) -> bytes:
    return base64.b64decode(text)
