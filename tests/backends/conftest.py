from __future__ import annotations

import pytest

from shipyard.backends.local.backend import LocalBackend
from tests.backends.engine import Engine


@pytest.fixture(scope="session")
def local_engine(tmp_path_factory) -> Engine:
    return Engine("local", lambda: LocalBackend(slots=2), tmp_path_factory.mktemp("local"))
