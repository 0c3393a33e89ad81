"""BackgroundProbe: an engine's health asked again in the background, never blocking."""

from __future__ import annotations

import threading

from shipyard.backends.health import BackgroundProbe


def test_a_stale_answer_is_returned_at_once_and_asked_again_in_the_background():
    release = threading.Event()
    asked: list[int] = []

    def probe() -> str:
        asked.append(1)
        if len(asked) > 1:
            release.wait(30)  # a slow engine
        return f"answer {len(asked)}"

    health = BackgroundProbe(probe, "none yet", max_age_s=3600, name="test-health")
    assert health.last == "none yet"
    assert health.check() == "answer 1"
    assert health.get() == "answer 1"  # fresh: not asked again
    assert len(asked) == 1
    health.expire()
    assert health.get() == "answer 1"  # the slow probe runs in a thread of its own
    assert health.get() == "answer 1"  # one at a time
    release.set()
    thread = health._thread
    assert thread is not None
    thread.join(30)
    assert len(asked) == 2 and health.last == "answer 2"


def test_a_closed_probe_is_not_asked_again():
    asked: list[int] = []
    health = BackgroundProbe(lambda: asked.append(1), None, max_age_s=0, name="test-health")
    health.close()
    health.get()
    assert asked == [] and health._thread is None
