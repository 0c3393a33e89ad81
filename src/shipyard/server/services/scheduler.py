"""Places queued trials on free slots: by priority (smaller first, as in Determined); among
equal priorities by fair share of the slots, weighted by resources.weight; within an
experiment in submission order. A multi-slot trial gets all its slots at once or waits
(a gang), and smaller trials behind it may start meanwhile (backfill).

In a pool with preemption, a waiting trial of better priority takes the slots of running
trials of worse priority, and no trial of worse priority is placed while it waits for
them (else the slots it freed would go back to the trials it preempted).

A workspace's quotas (slots, running trials) hold across every pool: a trial that would
go over them waits, whatever its priority, and is no reason to preempt anything."""

from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass, field, replace

from shipyard.backends.base import Slot


@dataclass(frozen=True)
class Request:
    trial_id: int
    experiment_id: int
    priority: int
    slots_needed: int
    max_slots: int | None  # the experiment's cap on slots in use at once
    weight: float = 1.0  # the experiment's share among equal priorities
    workspace_id: int = 0


@dataclass
class Quotas:
    """The workspaces' limits and what each holds: updated as trials are placed, so one
    object passed to every pool's pass keeps the limits across pools."""

    limits: dict[int, tuple[int | None, int | None]] = field(default_factory=dict)
    names: dict[int, str] = field(default_factory=dict)
    slots: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    trials: dict[int, int] = field(default_factory=lambda: defaultdict(int))

    def over(self, req: Request) -> str | None:
        """Why the request would go over its workspace's quota, or None."""
        max_slots, max_trials = self.limits.get(req.workspace_id, (None, None))
        name = self.names.get(req.workspace_id, str(req.workspace_id))
        held = self.slots[req.workspace_id]
        if max_slots is not None and held + req.slots_needed > max_slots:
            return f"its workspace {name!r} is at its quota: {held} of {max_slots} slots in use"
        running = self.trials[req.workspace_id]
        if max_trials is not None and running + 1 > max_trials:
            return (
                f"its workspace {name!r} is at its quota: {running} of {max_trials} trials running"
            )
        return None

    def take(self, req: Request) -> None:
        self.slots[req.workspace_id] += req.slots_needed
        self.trials[req.workspace_id] += 1

    def copy(self) -> Quotas:
        return replace(
            self,
            slots=defaultdict(int, self.slots),
            trials=defaultdict(int, self.trials),
        )


@dataclass(frozen=True)
class Running:
    trial_id: int
    priority: int
    slots: int
    leaving: bool  # already asked to give up its slots (preempted, paused, stopped)


def assign(
    requests: list[Request],
    free: list[Slot],
    in_use_by_experiment: dict[int, int],
    *,
    reserve: bool = False,
    quotas: Quotas | None = None,
) -> dict[int, list[Slot]]:
    """trial id -> the slots it gets now. Each free slot goes, in turn, to the experiment
    with the best priority, then the fewest slots in use per unit of weight (so weights 1
    and 3 share 4 slots 1:3), then the oldest; requests that do not fit wait. With
    `reserve` (preemption), a request that waits for slots holds back every request of
    worse priority."""
    free = list(free)
    used: dict[int, int] = defaultdict(int, in_use_by_experiment)
    queues = _queues(requests)
    out: dict[int, list[Slot]] = {}
    quotas = quotas if quotas is not None else Quotas()
    held_back_above: int | None = None  # priorities worse than this wait
    # Not `while free`: a trial of slots_per_trial 0 holds no slot, so it starts even when
    # none is free. Each turn places or drops a head, or stops.
    while True:
        for q in queues.values():  # over its workspace's quota: waits (its whole queue)
            if q and quotas.over(q[0]):
                q.clear()
        # An experiment's trials all need the same slots: only the head of its queue counts.
        heads = [
            q[0]
            for q in queues.values()
            if q
            and _within_max_slots(q[0], used)
            and (
                held_back_above is None
                or q[0].priority <= held_back_above
                or q[0].slots_needed == 0  # takes nothing from the trial held back for
            )
        ]
        if not reserve:
            heads = [r for r in heads if r.slots_needed <= len(free)]
        if not heads:
            break
        req = min(heads, key=lambda r: _turn(r, used))
        if req.slots_needed > len(free):
            # Only with reserve: it waits for slots, and so does everything worse than it.
            held_back_above = req.priority
            queues[req.experiment_id].clear()
            continue
        out[req.trial_id], free = free[: req.slots_needed], free[req.slots_needed :]
        used[req.experiment_id] += req.slots_needed
        quotas.take(req)
        queues[req.experiment_id].popleft()
    return out


def preemptions(
    requests: list[Request],
    running: list[Running],
    free: int,
    in_use_by_experiment: dict[int, int],
    quotas: Quotas | None = None,
) -> list[int]:
    """The running trials to preempt so that waiting requests of better priority can start.
    Walks the queue in scheduling order: a request that does not fit in the free slots
    plus those already being given up takes slots from running trials of strictly worse
    priority, the worst priority first and then the newest. One that would not fit even
    then takes nothing."""
    available = free + sum(r.slots for r in running if r.leaving)
    candidates = sorted(
        (r for r in running if not r.leaving), key=lambda r: (-r.priority, -r.trial_id)
    )
    victims: list[int] = []
    used: dict[int, int] = defaultdict(int, in_use_by_experiment)
    quotas = quotas.copy() if quotas is not None else Quotas()
    queues = _queues(requests)
    while heads := [q[0] for q in queues.values() if q]:
        req = min(heads, key=lambda r: _turn(r, used))
        queues[req.experiment_id].popleft()
        if not _within_max_slots(req, used) or quotas.over(req):
            continue
        if req.slots_needed > available:
            worse = [r for r in candidates if r.priority > req.priority]
            take: list[Running] = []
            for r in worse:
                if available + sum(t.slots for t in take) >= req.slots_needed:
                    break
                take.append(r)
            gained = sum(t.slots for t in take)
            if available + gained < req.slots_needed:
                continue  # even all of them would not make room
            victims += [t.trial_id for t in take]
            candidates = [c for c in candidates if c not in take]
            available += gained
        available -= req.slots_needed
        used[req.experiment_id] += req.slots_needed
        quotas.take(req)
    return victims


def queue_order(
    requests: list[Request],
    free: int,
    in_use_by_experiment: dict[int, int],
    *,
    reserve: bool = False,
    freeing: int = 0,
    quotas: Quotas | None = None,
) -> list[tuple[Request, str]]:
    """Every request in the order the scheduler takes them, each with what happens to it
    now: it starts, or why it waits. (Later ones are ordered as if the earlier ran.)
    `reserve` and `freeing`: the pool preempts, and that many slots are being given up."""
    used: dict[int, int] = defaultdict(int, in_use_by_experiment)
    quotas = quotas if quotas is not None else Quotas()
    queues = _queues(requests)
    out: list[tuple[Request, str]] = []
    held_back_by: Request | None = None
    while heads := [q[0] for q in queues.values() if q]:
        req = min(heads, key=lambda r: _turn(r, used))
        queues[req.experiment_id].popleft()
        if req.max_slots is not None and used[req.experiment_id] + req.slots_needed > req.max_slots:
            reason = f"its experiment holds its max_slots ({req.max_slots})"
        elif over_quota := quotas.over(req):
            reason = over_quota
        elif held_back_by is not None and req.priority > held_back_by.priority:
            reason = f"held back: trial {held_back_by.trial_id} of better priority waits for slots"
        elif req.slots_needed > free:
            wanted = "a free slot" if req.slots_needed == 1 else f"{req.slots_needed} free slots"
            reason = f"waits for {wanted} ({free} free"
            reason += f", {freeing} being given up by preemption)" if freeing else ")"
            if reserve and held_back_by is None:
                held_back_by = req
        else:
            reason = "starts now"
            free -= req.slots_needed
            quotas.take(req)
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


def _within_max_slots(req: Request, used: dict[int, int]) -> bool:
    return req.max_slots is None or used[req.experiment_id] + req.slots_needed <= req.max_slots
