"""A seeded random orchestrator for the adaptive searchers' tests, and the restart check.

drive() plays a master that follows the searcher contract but in an erratic order: trials
validate at their target, between targets or past them, report NaN now and then, error out,
and exits come late. It records every event with the actions it got, so a test can replay
any prefix into a searcher, restart it from its JSON state and compare the rest.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from shipyard.search import (
    Action,
    Create,
    ExitReason,
    Searcher,
    SetTarget,
    Shutdown,
    Stop,
    TrialRequest,
)

# ("validation", request_id, metrics, steps_completed) or ("exit", request_id, reason)
Event = tuple[Any, ...]


@dataclass
class Log:
    created: list[TrialRequest] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    outputs: list[list[Action]] = field(default_factory=list)
    max_training: int = 0  # most trials training (created or resumed, not waiting) at once

    def actions(self) -> list[Action]:
        return [a for out in self.outputs for a in out]


def send(searcher: Searcher, event: Event) -> list[Action]:
    if event[0] == "validation":
        return searcher.on_validation(event[1], event[2], event[3])
    return searcher.on_trial_exit(event[1], event[2])


def drive(
    searcher: Searcher,
    length: int,
    seed: int,
    *,
    time_metric: str | None = None,
    error_rate: float = 0.03,
    nan_rate: float = 0.05,
    max_events: int = 100_000,
) -> Log:
    rng = random.Random(seed)
    log = Log()
    targets: dict[str, int] = {}  # training trials -> target
    times: dict[str, int] = {}
    waiting: set[str] = set()
    exits: list[tuple[str, ExitReason]] = []
    exited: set[str] = set()
    stopped: set[str] = set()
    done = False

    def ending(request_id: str) -> bool:
        """Its exit is on the way: the searcher may still answer it, the answer is moot."""
        return any(rid == request_id for rid, _ in exits)

    def start(request: TrialRequest) -> None:
        log.created.append(request)
        targets[request.request_id] = request.target or length
        times[request.request_id] = 0

    for request in searcher.create_trials():
        start(request)
    while not done and len(log.events) < max_events:
        log.max_training = max(log.max_training, len(targets))
        training = sorted(targets)
        if exits and (not training or rng.random() < 0.3):
            request_id, reason = exits.pop(rng.randrange(len(exits)))
            event: Event = ("exit", request_id, reason)
        elif waiting and rng.random() < error_rate / 3:  # canceled while it waits
            request_id = rng.choice(sorted(waiting))
            waiting.discard(request_id)
            event = ("exit", request_id, ExitReason.CANCELED)
        elif training:
            request_id = rng.choice(training)
            if rng.random() < error_rate:
                del targets[request_id]
                event = ("exit", request_id, rng.choice([ExitReason.ERRORED, ExitReason.CANCELED]))
            else:
                event = _validation(rng, request_id, times, targets, length, time_metric, nan_rate)
        else:
            raise AssertionError(f"deadlock: {sorted(waiting)} wait and nothing else happens")
        outputs = send(searcher, event)
        log.events.append(event)
        log.outputs.append(outputs)
        if event[0] == "exit":
            exited.add(event[1])
        for action in outputs:
            if isinstance(action, Stop | SetTarget):
                assert action.request_id not in exited, f"{action} after the trial exited"
            if isinstance(action, Stop):
                assert action.request_id not in stopped, f"second {action}"
                stopped.add(action.request_id)
            if isinstance(action, Create):
                start(action.request)
            elif isinstance(action, Stop):
                targets.pop(action.request_id, None)
                waiting.discard(action.request_id)
                if not ending(action.request_id):
                    exits.append((action.request_id, ExitReason.STOPPED))
            elif isinstance(action, SetTarget) and not ending(action.request_id):
                waiting.discard(action.request_id)
                targets[action.request_id] = action.target
            elif isinstance(action, Shutdown):
                assert not (targets or waiting or exits), "Shutdown while trials remain"
                done = True
        if event[0] == "validation" and event[1] in targets:  # not stopped
            request_id, time = event[1], times[event[1]]
            if time >= length:
                del targets[request_id]
                exits.append((request_id, ExitReason.COMPLETED))
            elif time >= targets[request_id]:  # reached its target, no new one yet
                del targets[request_id]
                waiting.add(request_id)
    return log


def _validation(
    rng: random.Random,
    request_id: str,
    times: dict[str, int],
    targets: dict[str, int],
    length: int,
    time_metric: str | None,
    nan_rate: float,
) -> Event:
    now, target = times[request_id], targets[request_id]
    roll = rng.random()
    if roll < 0.2 and target - now > 1:
        time = rng.randrange(now + 1, target)  # between targets
    elif roll < 0.3:
        time = min(length, target + rng.randrange(0, length))  # overshoot
    else:
        time = target
    times[request_id] = time
    loss = float("nan") if rng.random() < nan_rate else round(rng.random(), 3)
    metrics: dict[str, Any] = {"loss": loss}
    if time_metric:
        metrics[time_metric] = time
    return ("validation", request_id, metrics, time)


def check_restarts(make: Callable[[], Searcher], log: Log, every: int = 1) -> None:
    """For every `every`-th prefix of the log: a searcher fed the prefix, saved as JSON and
    restored into a fresh one, answers the rest exactly as the uninterrupted one did."""
    for cut in range(0, len(log.events) + 1, every):
        first = make()
        first.create_trials()
        for event in log.events[:cut]:
            send(first, event)
        state = json.loads(json.dumps(first.get_state(), allow_nan=False))
        resumed = make()
        resumed.set_state(state)
        assert resumed.get_state() == first.get_state()
        assert resumed.progress() == first.progress()
        for event, expected in zip(log.events[cut:], log.outputs[cut:], strict=True):
            assert send(resumed, event) == expected, f"differs after a restart at event {cut}"
