from __future__ import annotations

import pytest

from tests.e2e.master import Master


@pytest.fixture
def master(tmp_path):
    m = Master(tmp_path / "home").start()
    yield m
    m.stop()


@pytest.fixture
def own_master(tmp_path):
    """A master of the test's own, in a module whose tests share one (`shared_master`): for
    a test that kills or restarts it."""
    m = Master(tmp_path / "home").start()
    yield m
    m.stop()


@pytest.fixture(scope="module")
def shared_master(request, tmp_path_factory):
    """One master for a module's tests (a module takes it as its `master`): each of them
    submits experiments of its own and waits until they end, so the slots are free again for
    the next, and none kills or restarts the master (those take `own_master`). A master
    start is a second or two of the suite's critical path each time."""
    m = Master(tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1]) / "home")
    yield m.start()
    m.stop()
