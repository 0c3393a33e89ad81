"""What the backend contract suite (test_contract.py) needs from an engine under test.

Each engine's session fixture (``local_engine`` in tests/backends/conftest.py, the others in
tests/fixtures/) starts the real engine and returns an Engine."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from shipyard.backends.base import Backend


@dataclass
class Engine:
    name: str
    # A new backend instance on the same engine: what a restarted master makes.
    make_backend: Callable[[], Backend]
    # A directory the engine's processes can read and write (their working directory).
    workdir: Path
    # Run the trials in this container image (the container engines); None: on the host.
    image: str | None = None
