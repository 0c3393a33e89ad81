"""Slot assignment: priority first, gangs get all their slots or wait, max_slots caps."""

from shipyard.backends.base import Slot
from shipyard.server.services.scheduler import (
    Quotas,
    Request,
    Running,
    assign,
    preemptions,
    queue_order,
)

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


# -- preemption ---------------------------------------------------------------------------


def running(trial, priority=42, slots=1, leaving=False):
    return Running(trial, priority, slots, leaving)


def test_without_reserve_a_small_trial_backfills_past_a_waiting_gang():
    requests = [req(1, exp=1, priority=10, need=2), req(2, exp=2, priority=50)]
    assert list(assign(requests, SLOTS[:1], {})) == [2]


def test_with_reserve_nothing_of_worse_priority_takes_slots_a_better_gang_waits_for():
    requests = [req(1, exp=1, priority=10, need=2), req(2, exp=2, priority=50)]
    assert assign(requests, SLOTS[:1], {}, reserve=True) == {}
    # equal priorities still backfill: there is no preemption between them
    requests = [req(1, exp=1, priority=10, need=2), req(2, exp=2, priority=10)]
    assert list(assign(requests, SLOTS[:1], {}, reserve=True)) == [2]


def test_a_better_priority_request_preempts_the_worst_and_newest_running_trials():
    victims = preemptions(
        [req(9, exp=3, priority=10, need=2)],
        [running(1, priority=42), running(2, priority=60), running(3, priority=60)],
        free=0,
        in_use_by_experiment={},
    )
    assert victims == [3, 2]  # priority 60 before 42; the newer trial first


def test_preemption_takes_only_as_many_slots_as_are_missing():
    victims = preemptions(
        [req(9, exp=3, priority=10, need=2)],
        [running(1, priority=50), running(2, priority=50)],
        free=1,
        in_use_by_experiment={},
    )
    assert victims == [2]


def test_slots_already_being_given_up_are_counted_before_preempting_more():
    victims = preemptions(
        [req(9, exp=3, priority=10)],
        [running(1, priority=50, leaving=True), running(2, priority=50)],
        free=0,
        in_use_by_experiment={},
    )
    assert victims == []


def test_equal_or_better_priorities_are_never_preempted():
    running_trials = [running(1, priority=10), running(2, priority=42)]
    assert preemptions([req(9, exp=3, priority=42)], running_trials, 0, {}) == []


def test_a_request_that_would_not_fit_even_after_preempting_takes_nothing():
    victims = preemptions(
        [req(9, exp=3, priority=10, need=3)],
        [running(1, priority=50), running(2, priority=10)],
        free=0,
        in_use_by_experiment={},
    )
    assert victims == []


def test_max_slots_is_respected_when_preempting():
    victims = preemptions(
        [req(9, exp=3, priority=10, max_slots=1)], [running(1, priority=50)], 0, {3: 1}
    )
    assert victims == []


def test_queue_order_explains_slots_being_given_up_and_held_back_requests():
    order = queue_order(
        [req(1, exp=1, priority=10, need=2), req(2, exp=2, priority=50)],
        1,
        {},
        reserve=True,
        freeing=1,
    )
    assert [reason for _, reason in order] == [
        "waits for 2 free slots (1 free, 1 being given up by preemption)",
        "held back: trial 1 of better priority waits for slots",
    ]


def quotas(max_slots=None, max_trials=None, slots=0, trials=0) -> Quotas:
    """Workspace 7 ("team") with these limits, holding these slots and trials now."""
    found = Quotas(limits={7: (max_slots, max_trials)}, names={7: "team"})
    found.slots[7], found.trials[7] = slots, trials
    return found


def in_team(trial, exp=1, need=1, priority=42):
    return Request(trial, exp, priority, need, None, 1.0, workspace_id=7)


def test_a_workspace_quota_of_slots_holds_across_its_experiments():
    limits = quotas(max_slots=3, slots=1)
    placed = assign(
        [in_team(1, exp=1), in_team(2, exp=2), in_team(3, exp=3)], SLOTS, {}, quotas=limits
    )
    assert len(placed) == 2 and limits.slots[7] == 3
    # another pool's pass sees what this one placed: nothing more starts there
    assert assign([in_team(4, exp=4)], SLOTS, {}, quotas=limits) == {}
    # a workspace without a quota is not held back
    assert list(assign([req(5, exp=5)], SLOTS[:1], {}, quotas=limits)) == [5]


def test_a_workspace_quota_of_running_trials_and_its_reason_in_the_queue():
    order = queue_order(
        [in_team(1, exp=1, need=1), in_team(2, exp=2, need=1)], 4, {}, quotas=quotas(max_trials=1)
    )
    assert [reason for _, reason in order] == [
        "starts now",
        "its workspace 'team' is at its quota: 1 of 1 trials running",
    ]
    order = queue_order([in_team(1, need=2)], 4, {}, quotas=quotas(max_slots=2, slots=1))
    assert order[0][1] == "its workspace 'team' is at its quota: 1 of 2 slots in use"


def test_a_request_over_its_workspace_quota_preempts_nothing():
    victims = preemptions(
        [in_team(9, exp=3, priority=10)], [running(1, priority=50)], 0, {}, quotas(max_trials=0)
    )
    assert victims == []
