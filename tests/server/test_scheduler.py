"""Slot assignment: priority first, gangs get all their slots or wait, max_slots caps."""

from shipyard.backends.base import Slot
from shipyard.server.workers.scheduler import Request, assign

SLOTS = [Slot(id=f"cpu{i}", kind="cpu", device="cpu", index=i) for i in range(4)]


def req(trial, exp=1, priority=42, need=1, max_slots=None):
    return Request(trial, exp, priority, need, max_slots)


def test_smaller_priority_number_runs_first():
    placed = assign([req(1, exp=1, priority=50), req(2, exp=2, priority=10)], SLOTS[:1], {})
    assert list(placed) == [2]


def test_same_priority_runs_in_submission_order():
    placed = assign([req(3, exp=2), req(1, exp=1), req(2, exp=1)], SLOTS[:2], {})
    assert sorted(placed) == [1, 2]


def test_a_gang_gets_all_its_slots_or_waits_while_smaller_trials_backfill():
    placed = assign([req(1, need=3), req(2, exp=2, need=1)], SLOTS[:2], {})
    assert list(placed) == [2]
    placed = assign([req(1, need=3)], SLOTS, {})
    assert [s.id for s in placed[1]] == ["cpu0", "cpu1", "cpu2"]


def test_max_slots_caps_an_experiment_counting_slots_already_in_use():
    placed = assign([req(1, max_slots=2), req(2, max_slots=2)], SLOTS, {1: 1})
    assert list(placed) == [1]


def test_no_slot_is_given_twice():
    placed = assign([req(i, exp=i) for i in range(1, 7)], SLOTS, {})
    given = [s.id for slots in placed.values() for s in slots]
    assert len(given) == len(set(given)) == 4
