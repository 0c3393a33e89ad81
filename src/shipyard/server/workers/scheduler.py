"""Places queued trials on free slots: by priority (smaller first, as in Determined); among
equal priorities by fair share of the slots, weighted by resources.weight; within an
experiment in submission order. A multi-slot trial gets all its slots at once or waits
(a gang), and smaller trials behind it may start meanwhile (backfill)."""

from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass

from shipyard.backends.base import Slot


@dataclass(frozen=True)
class Request:
    trial_id: int
    experiment_id: int
    priority: int
    slots_needed: int
    max_slots: int | None  # the experiment's cap on slots in use at once
    weight: float = 1.0  # the experiment's share among equal priorities


def assign(
    requests: list[Request], free: list[Slot], in_use_by_experiment: dict[int, int]
) -> dict[int, list[Slot]]:
    """trial id -> the slots it gets now. Each free slot goes, in turn, to the experiment
    with the best priority, then the fewest slots in use per unit of weight (so weights 1
    and 3 share 4 slots 1:3), then the oldest; requests that do not fit wait."""
    free = list(free)
    used: dict[int, int] = defaultdict(int, in_use_by_experiment)
    queues = _queues(requests)
    out: dict[int, list[Slot]] = {}
    while free:
        # An experiment's trials all need the same slots: only the head of its queue counts.
        heads = [q[0] for q in queues.values() if q and _fits(q[0], len(free), used)]
        if not heads:
            break
        req = min(heads, key=lambda r: _turn(r, used))
        out[req.trial_id], free = free[: req.slots_needed], free[req.slots_needed :]
        used[req.experiment_id] += req.slots_needed
        queues[req.experiment_id].popleft()
    return out


def queue_order(
    requests: list[Request], free: int, in_use_by_experiment: dict[int, int]
) -> list[tuple[Request, str]]:
    """Every request in the order the scheduler takes them, each with what happens to it
    now: it starts, or why it waits. (Later ones are ordered as if the earlier ran.)"""
    used: dict[int, int] = defaultdict(int, in_use_by_experiment)
    queues = _queues(requests)
    out: list[tuple[Request, str]] = []
    while heads := [q[0] for q in queues.values() if q]:
        req = min(heads, key=lambda r: _turn(r, used))
        queues[req.experiment_id].popleft()
        if req.max_slots is not None and used[req.experiment_id] + req.slots_needed > req.max_slots:
            reason = f"its experiment holds its max_slots ({req.max_slots})"
        elif req.slots_needed > free:
            wanted = "a free slot" if req.slots_needed == 1 else f"{req.slots_needed} free slots"
            reason = f"waits for {wanted} ({free} free)"
        else:
            reason = "starts now"
            free -= req.slots_needed
        used[req.experiment_id] += req.slots_needed
        out.append((req, reason))
    return out


def _queues(requests: list[Request]) -> dict[int, deque[Request]]:
    queues: dict[int, deque[Request]] = defaultdict(deque)
    for req in sorted(requests, key=lambda r: r.trial_id):
        queues[req.experiment_id].append(req)
    return queues


def _turn(req: Request, used: dict[int, int]) -> tuple[int, float, int]:
    """Whose turn it is: smaller priority, then fewer slots per unit of weight, then older."""
    return (req.priority, used[req.experiment_id] / req.weight, req.experiment_id)


def _fits(req: Request, free: int, used: dict[int, int]) -> bool:
    if req.slots_needed > free:
        return False
    return req.max_slots is None or used[req.experiment_id] + req.slots_needed <= req.max_slots
