"""Places queued trials on free slots: by priority (smaller first, as in Determined), then
submission order; a multi-slot trial gets all its slots at once or waits (a gang)."""

from __future__ import annotations

from dataclasses import dataclass

from shipyard.backends.base import Slot


@dataclass(frozen=True)
class Request:
    trial_id: int
    experiment_id: int
    priority: int
    slots_needed: int
    max_slots: int | None  # the experiment's cap on slots in use at once


def assign(
    requests: list[Request], free: list[Slot], in_use_by_experiment: dict[int, int]
) -> dict[int, list[Slot]]:
    """trial id -> the slots it gets now. Requests that do not fit wait; smaller ones
    behind them may still start (backfill)."""
    free = list(free)
    used = dict(in_use_by_experiment)
    out: dict[int, list[Slot]] = {}
    for req in sorted(requests, key=lambda r: (r.priority, r.experiment_id, r.trial_id)):
        if req.slots_needed > len(free):
            continue
        if (
            req.max_slots is not None
            and used.get(req.experiment_id, 0) + req.slots_needed > req.max_slots
        ):
            continue
        out[req.trial_id], free = free[: req.slots_needed], free[req.slots_needed :]
        used[req.experiment_id] = used.get(req.experiment_id, 0) + req.slots_needed
    return out
