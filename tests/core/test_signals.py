"""The trial's view of the master's signals: a stop is never taken back and a target only
grows, even when an older answer (a long-poll read before a change) arrives last."""

from __future__ import annotations

from shipyard.core._signals import SignalPoller


def test_an_older_answer_does_not_undo_a_stop_or_a_newer_target():
    signals = SignalPoller(http=None, trial_id=1, target=4)  # type: ignore[arg-type]
    signals.update({"stop": False, "preempt": False, "target": 16})
    signals.update({"stop": False, "preempt": False, "target": 4})  # read before the change
    assert signals.target == 16
    signals.update({"stop": True, "target": 16})
    signals.update({"stop": False, "target": 16})
    assert signals.stop is True
