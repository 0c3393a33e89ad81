"""Slot assignment: priority first, gangs get all their slots or wait, max_slots caps."""

from shipyard.backends.base import Slot
from shipyard.server.workers.scheduler import Request, assign, queue_order

SLOTS = [Slot(id=f"cpu{i}", kind="cpu", device="cpu", index=i) for i in range(4)]


def req(trial, exp=1, priority=42, need=1, max_slots=None, weight=1.0):
    return Request(trial, exp, priority, need, max_slots, weight)


def test_smaller_priority_number_runs_first():
    placed = assign([req(1, exp=1, priority=50), req(2, exp=2, priority=10)], SLOTS[:1], {})
    assert list(placed) == [2]


def test_within_an_experiment_trials_start_in_submission_order():
    placed = assign([req(3), req(1), req(2)], SLOTS[:2], {})
    assert sorted(placed) == [1, 2]


def test_equal_priorities_share_the_slots_between_experiments():
    placed = assign([req(1, exp=1), req(2, exp=1), req(3, exp=2), req(4, exp=2)], SLOTS[:2], {})
    assert sorted(placed) == [1, 3]  # one each, not both to the older experiment


def test_weights_split_the_slots_in_proportion():
    requests = [req(i, exp=1, weight=1) for i in range(1, 5)]
    requests += [req(i, exp=2, weight=3) for i in range(5, 9)]
    placed = assign(requests, SLOTS, {})
    by_experiment = [r.experiment_id for r in requests if r.trial_id in placed]
    assert sorted(by_experiment) == [1, 2, 2, 2]


def test_fair_share_counts_the_slots_already_in_use():
    placed = assign([req(1, exp=1), req(2, exp=2)], SLOTS[:1], {2: 2})
    assert list(placed) == [1]


def test_priority_comes_before_fair_share():
    placed = assign(
        [req(1, exp=1, priority=10), req(2, exp=1, priority=10), req(3, exp=2)], SLOTS[:2], {}
    )
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


def test_queue_order_lists_every_request_in_turn_with_why_it_waits():
    requests = [
        req(1, exp=1, need=2),
        req(2, exp=2, priority=10),
        req(3, exp=3, max_slots=1),
    ]
    order = queue_order(requests, free=1, in_use_by_experiment={3: 1})
    assert [(r.trial_id, reason) for r, reason in order] == [
        (2, "starts now"),
        (1, "waits for 2 free slots (0 free)"),
        (3, "its experiment holds its max_slots (1)"),
    ]
