from __future__ import annotations

import pytest

from tests.e2e.master import Master


@pytest.fixture
def master(tmp_path):
    m = Master(tmp_path / "home").start()
    yield m
    m.stop()
