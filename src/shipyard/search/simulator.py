"""A pure, deterministic, event-driven orchestrator for searchers, for tests and benchmarks.

simulate() plays the master: it starts the trials a searcher creates on `workers` parallel
workers (a FIFO queue in creation order), trains each one time unit per unit of simulated
clock, reports validations from a given learning curve, and applies the searcher's actions
by the rules the server follows (base.py):
- a trial validates when it reaches its target (the full length when it has none) and,
  with validate_every, at every multiple of it; metrics are {metric: curve(hparams, t)}
  plus {time_metric: t} when the searcher has one, with steps_completed = t;
- after validating at a target short of the full length it waits for SetTarget or Stop,
  freeing its worker unless the answer came at once; resumed, it queues again and
  continues from where it was (as from a checkpoint, at no extra cost);
- at the full length it exits COMPLETED; after a Stop it exits STOPPED at once.
Searcher mistakes the server would have to survive (an action for a trial whose exit the
searcher was told of, a second Stop, an action after Shutdown, a search that waits forever
or ends without Shutdown) raise SimulationError. An action for a trial that ended while its
exit is still on the way to the searcher is ignored, as the server ignores it.

The result (Simulation) has each trial's request id, hparams, units trained, final state
and validations; the total compute (units trained by all trials), the simulated wall clock,
every action in order, and compute_to_reach(value): the compute spent when the best
validation seen first reached `value`.

Events at the same simulated time are ordered by a hash of (seed, request id, time), so
different seeds try different interleavings of an asynchronous search.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from shipyard.search.base import (
    Action,
    Create,
    ExitReason,
    Searcher,
    SetTarget,
    Shutdown,
    Stop,
    TrialRequest,
)
from shipyard.search.options import SearcherOptions

Curve = Callable[[dict[str, Any], int], float]


class SimulationError(RuntimeError):
    """The searcher broke a rule of the searcher contract, or the search never ends."""


@dataclass
class SimTrial:
    request_id: str
    hparams: dict[str, Any]
    target: int | None
    units: int = 0  # time units trained so far
    state: str = "queued"  # queued, running, waiting, or an ExitReason value once exited
    stop_sent: bool = False
    validations: list[tuple[int, float]] = field(default_factory=list)


@dataclass
class Simulation:
    """The result: per-trial records, totals, and every action in the order it came."""

    trials: list[SimTrial]
    compute: int  # units trained over all trials
    clock: int  # simulated wall clock at the end
    actions: list[Action]
    shutdowns: list[Shutdown]
    peak_unfinished: int  # most trials created and not yet exited at once
    peak_running: int  # most trials on workers at once
    smaller_is_better: bool
    # (compute so far, best value so far), one entry each time the best improved
    best_curve: list[tuple[int, float]] = field(default_factory=list)

    def compute_to_reach(self, value: float) -> int | None:
        """Compute spent when the best validation seen first reached `value`, or None."""
        for compute, best in self.best_curve:
            if (best <= value) if self.smaller_is_better else (best >= value):
                return compute
        return None

    @property
    def best(self) -> float | None:
        return self.best_curve[-1][1] if self.best_curve else None


def simulate(
    searcher: Searcher,
    curve: Curve,
    *,
    workers: int,
    validate_every: int | None = None,
    seed: int = 0,
    restart_every: int | None = None,
    rebuild: Callable[[], Searcher] | None = None,
) -> Simulation:
    """Run `searcher` (fresh: create_trials not yet called) to its Shutdown.

    restart_every=k with rebuild: every k searcher calls, replace the searcher by rebuild()
    resumed from json.loads(json.dumps(get_state())), as a restarted master would."""
    if workers < 1:
        raise ValueError(f"simulate: workers must be at least 1, got {workers}")
    if restart_every is not None and (rebuild is None or restart_every < 1):
        raise ValueError("simulate: restart_every needs rebuild and must be at least 1")
    return _Simulator(searcher, curve, workers, validate_every, seed, restart_every, rebuild).run()


class _Simulator:
    def __init__(
        self,
        searcher: Searcher,
        curve: Curve,
        workers: int,
        validate_every: int | None,
        seed: int,
        restart_every: int | None,
        rebuild: Callable[[], Searcher] | None,
    ) -> None:
        options = getattr(searcher, "options", None)
        if not isinstance(options, SearcherOptions):
            raise TypeError("simulate: the searcher has no SearcherOptions in .options")
        if options.length is None:
            raise ValueError("simulate: the searcher config sets no max_length or max_time")
        self.options: SearcherOptions = options
        self.length: int = options.length
        self.searcher, self.curve, self.workers = searcher, curve, workers
        self.validate_every, self.seed = validate_every, seed
        self.restart_every, self.rebuild = restart_every, rebuild
        self.trials: dict[str, SimTrial] = {}
        self.queue: deque[str] = deque()
        self.running: dict[str, int] = {}  # request id -> clock its units were counted to
        self.events: list[tuple[int, str, int, str]] = []  # (time, tiebreak, epoch, id)
        self.epoch: dict[str, int] = {}  # invalidates a running trial's stale events
        self.exits: deque[tuple[str, ExitReason]] = deque()  # not yet told the searcher
        self.reported: set[str] = set()  # exits the searcher was told of
        self.clock = 0
        self.compute = 0
        self.calls = 0
        self.exited = 0
        self.actions: list[Action] = []
        self.shutdowns: list[Shutdown] = []
        self.peak_unfinished = self.peak_running = 0
        self.best_curve: list[tuple[int, float]] = []

    def run(self) -> Simulation:
        for request in self.searcher.create_trials():
            self._create(request)
        while not self.shutdowns:
            self._start_queued()
            if self.exits:
                self._report_exit(*self.exits.popleft())
            elif self.events:
                self._advance()
            else:
                self._deadlock()
        return Simulation(
            trials=list(self.trials.values()),
            compute=self.compute,
            clock=self.clock,
            actions=self.actions,
            shutdowns=self.shutdowns,
            peak_unfinished=self.peak_unfinished,
            peak_running=self.peak_running,
            smaller_is_better=self.options.smaller_is_better,
            best_curve=self.best_curve,
        )

    # --- time -----------------------------------------------------------------------------

    def _start_queued(self) -> None:
        while self.queue and len(self.running) < self.workers:
            trial = self.trials[self.queue.popleft()]
            trial.state = "running"
            self.running[trial.request_id] = self.clock
            self._schedule(trial)
        self.peak_running = max(self.peak_running, len(self.running))

    def _sync(self, trial: SimTrial) -> None:
        """Bring a running trial's units up to the clock."""
        since = self.running[trial.request_id]
        trial.units += self.clock - since
        self.running[trial.request_id] = self.clock

    def _off_worker(self, trial: SimTrial) -> None:
        if trial.request_id in self.running:
            self._sync(trial)
            del self.running[trial.request_id]

    def _schedule(self, trial: SimTrial) -> None:
        stop_at = min(trial.target or self.length, self.length)
        if self.validate_every:
            stop_at = min(stop_at, (trial.units // self.validate_every + 1) * self.validate_every)
        stop_at = max(stop_at, trial.units + 1)
        epoch = self.epoch[trial.request_id] = self.epoch.get(trial.request_id, 0) + 1
        time = self.clock + stop_at - trial.units
        tiebreak = hashlib.blake2b(
            f"{self.seed}/{trial.request_id}/{time}".encode(), digest_size=8
        ).hexdigest()
        heapq.heappush(self.events, (time, tiebreak, epoch, trial.request_id))

    def _advance(self) -> None:
        time, _, epoch, request_id = heapq.heappop(self.events)
        trial = self.trials[request_id]
        if trial.state != "running" or epoch != self.epoch[request_id]:
            return  # stale: the trial was stopped or its target changed
        self.compute += (time - self.clock) * len(self.running)
        self.clock = time
        self._sync(trial)
        self._validate(trial)

    def _validate(self, trial: SimTrial) -> None:
        t = trial.units
        value = float(self.curve(trial.hparams, t))
        trial.validations.append((t, value))
        self._note_best(value)
        metrics: dict[str, Any] = {self.options.metric: value}
        if self.options.time_metric:
            metrics[self.options.time_metric] = t
        self._call(lambda s: s.on_validation(trial.request_id, metrics, t))
        if trial.state != "running":
            return  # stopped by its own validation
        if t >= self.length:
            self._exit(trial, ExitReason.COMPLETED)
        elif trial.target is not None and t >= trial.target:
            self._off_worker(trial)  # waits, without a worker, for SetTarget or Stop
            trial.state = "waiting"
        else:
            self._schedule(trial)

    def _note_best(self, value: float) -> None:
        if not math.isfinite(value):
            return
        if self.best_curve:
            best = self.best_curve[-1][1]
            if (value >= best) if self.options.smaller_is_better else (value <= best):
                return
        self.best_curve.append((self.compute, value))

    # --- the searcher -----------------------------------------------------------------------

    def _call(self, call: Callable[[Searcher], list[Action]]) -> None:
        actions = call(self.searcher)
        self.calls += 1
        for action in actions:
            self._apply(action)
        if self.restart_every and self.calls % self.restart_every == 0:
            assert self.rebuild is not None
            state = json.loads(json.dumps(self.searcher.get_state()))
            self.searcher = self.rebuild()
            self.searcher.set_state(state)

    def _report_exit(self, request_id: str, reason: ExitReason) -> None:
        self.reported.add(request_id)
        self._call(lambda searcher: searcher.on_trial_exit(request_id, reason))

    def _apply(self, action: Action) -> None:
        if self.shutdowns:
            raise SimulationError(f"action after Shutdown: {action}")
        self.actions.append(action)
        if isinstance(action, Create):
            self._create(action.request)
        elif isinstance(action, Shutdown):
            self.shutdowns.append(action)
        else:
            trial = self._live(action)
            if trial is None:
                return  # its exit is on the way to the searcher: moot, as on the server
            if isinstance(action, Stop):
                trial.stop_sent = True
                self._exit(trial, ExitReason.STOPPED)
            elif isinstance(action, SetTarget):
                self._set_target(trial, action.target)

    def _live(self, action: Stop | SetTarget) -> SimTrial | None:
        """The trial the action is for; None when it ended but the searcher does not know
        yet. An action for a trial whose exit the searcher has heard of is an error."""
        trial = self.trials.get(action.request_id)
        if trial is None:
            raise SimulationError(f"{action} names a trial that was never created")
        if isinstance(action, Stop) and trial.stop_sent:
            raise SimulationError(f"second Stop for {trial.request_id}")
        if trial.state in ("queued", "running", "waiting"):
            return trial
        if action.request_id in self.reported:
            raise SimulationError(f"{action} for a trial that exited ({trial.state})")
        return None

    def _set_target(self, trial: SimTrial, target: int) -> None:
        trial.target = target
        if trial.state == "running":
            self._sync(trial)
            self._schedule(trial)  # the old event is now stale
        elif trial.state == "waiting" and trial.units < min(target, self.length):
            trial.state = "queued"
            self.queue.append(trial.request_id)
        # A waiting trial already at the new target stays waiting: there is nothing to
        # train, so nothing new to report (as on the server).

    def _create(self, request: TrialRequest) -> None:
        if request.request_id in self.trials:
            raise SimulationError(f"request id {request.request_id} created twice")
        trial = SimTrial(request.request_id, request.hparams, request.target)
        self.trials[request.request_id] = trial
        self.queue.append(request.request_id)
        self.peak_unfinished = max(self.peak_unfinished, len(self.trials) - self.exited)

    def _exit(self, trial: SimTrial, reason: ExitReason) -> None:
        if trial.state == "queued":
            self.queue.remove(trial.request_id)
        self._off_worker(trial)
        trial.state = reason.value
        self.exited += 1
        self.exits.append((trial.request_id, reason))

    def _deadlock(self) -> None:
        waiting = [t.request_id for t in self.trials.values() if t.state == "waiting"]
        if waiting:
            raise SimulationError(
                f"deadlock at time {self.clock}: nothing runs or is queued, trials "
                f"{', '.join(waiting[:10])}{' ...' if len(waiting) > 10 else ''} wait for a "
                "SetTarget or Stop that never comes, and there was no Shutdown"
            )
        raise SimulationError(
            f"the search ended at time {self.clock} without a Shutdown "
            f"({len(self.trials)} trials, all exited)"
        )
