"""slots_per_trial 0 (Determined's CPU-only trial): it holds no slot, so the scheduler starts
it even when every slot is taken, holds nothing back for it, and preempts nothing for it;
it still counts as a running trial of its workspace."""

import pytest

from shipyard.backends.base import Slot
from shipyard.common.config import load_config
from shipyard.common.errors import NotSupportedYet
from shipyard.server.pools import Pool
from shipyard.server.services import experiments
from shipyard.server.services.scheduler import (
    Quotas,
    Request,
    Running,
    assign,
    preemptions,
    queue_order,
)

SLOT = [Slot(id="cpu0", kind="cpu", device="cpu", index=0)]


def req(trial, exp=1, priority=42, need=1, workspace=0):
    return Request(trial, exp, priority, need, None, workspace_id=workspace)


def test_a_zero_slot_trial_starts_with_no_slot_free():
    placed = assign([req(1, need=1), req(2, exp=2, need=0), req(3, exp=2, need=0)], [], {})
    assert placed == {2: [], 3: []}


def test_a_zero_slot_trial_takes_no_slot_from_a_one_slot_trial():
    placed = assign([req(1, exp=1, need=0), req(2, exp=2, need=1)], SLOT, {})
    assert placed == {1: [], 2: SLOT}


def test_a_waiting_gang_holds_back_slot_trials_but_not_zero_slot_ones():
    requests = [req(1, exp=1, priority=10, need=2), req(2, exp=2, priority=50, need=0)]
    requests.append(req(3, exp=3, priority=50, need=1))
    assert assign(requests, SLOT, {}, reserve=True) == {2: []}


def test_nothing_is_preempted_for_a_zero_slot_trial():
    running = [Running(trial_id=9, priority=90, slots=1, leaving=False)]
    assert preemptions([req(1, priority=1, need=0)], running, 0, {}) == []


def test_the_queue_says_it_starts_now_and_quotas_count_it_as_a_trial():
    quotas = Quotas(limits={5: (None, 1)}, names={5: "team"})
    order = queue_order(
        [req(1, need=0, workspace=5), req(2, need=0, workspace=5)], 0, {}, quotas=quotas
    )
    assert [reason for _, reason in order] == [
        "starts now",
        "its workspace 'team' is at its quota: 1 of 1 trials running",
    ]


def _pool(kind: str) -> Pool:
    return Pool(name="p", slots=tuple(SLOT), scheduler="priority", preemption=False, type=kind)


def test_zero_slots_run_only_in_pools_on_the_masters_machine():
    cfg = load_config(
        "entrypoint: python3 prep.py\nsearcher: {name: single, metric: x}\n"
        "resources: {slots_per_trial: 0}\n"
    )
    experiments._check_zero_slots_run_in(_pool("local"), cfg)
    with pytest.raises(NotSupportedYet) as err:
        experiments._check_zero_slots_run_in(_pool("slurm"), cfg)
    [detail] = err.value.details
    assert detail["path"] == "resources.slots_per_trial"
    assert detail["message"].startswith("resource pool 'p' is a slurm pool: slots_per_trial 0")
