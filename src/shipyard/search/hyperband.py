"""hyperband: Li et al.'s Hyperband, synchronous successive halving in brackets.

With R the full length (max_time with time_metric, or max_length) and eta the divisor
(default 3): s_max = min(max_rungs - 1, floor(log_eta R)) (max_rungs, default 5, is a cap:
a shorter R gives fewer rungs). Bracket b runs s = s_max - b: n_s = ceil((s_max + 1) /
(s + 1) * eta**s) trials start at r_s = max(int(R / eta**s), 1); rung k keeps n_s // eta**k
of them, training to r_s * eta**k, and the last rung (k = s) trains to R.

Synchronous: a rung is decided when every trial still in it reached the rung's length or
exited (an exited trial, and a NaN/inf/missing score, count as the worst value). Then the
top n_{k+1} get SetTarget to the next length, the rest Stop, with their rank as the reason.
Until then a trial that reached its target waits, holding no slot.

max_concurrent_trials (0: no limit) caps the trials *training* at once: a trial waiting for
its rung to be decided does not count (counting it could deadlock a rung larger than the
cap). New trials are created in bracket order, and a promoted trial resumes (gets its
SetTarget) before any new trial starts. max_trials is only a check: when given it must
cover the trials the brackets need.
"""

from __future__ import annotations

import copy
import math
from bisect import bisect_right
from collections import deque
from dataclasses import dataclass
from typing import Any

from shipyard.common.config.searcher import HyperbandSearcher as HyperbandConfig
from shipyard.common.config.searcher.rung_math import (
    Divisor,
    exact,
    hyperband_brackets,
    scaled_down,
)
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
from shipyard.search.population import known_trial, request_id_for
from shipyard.search.rungs import WORST, exit_note, read_validation
from shipyard.search.sampling import rng_for_trial, sample_point

KIND = "hyperband"
TRAINING, WAITING, EXITED = "training", "waiting", "exited"


@dataclass(frozen=True)
class Bracket:
    """One bracket's plan: rung k has sizes[k] trials training to lengths[k]."""

    s: int
    lengths: list[int]
    sizes: list[int]
    first_index: int  # the global index of its first trial

    @property
    def top(self) -> int:
        return len(self.lengths) - 1


def plan_brackets(length: int, eta: Divisor, max_rungs: int) -> list[Bracket]:
    brackets: list[Bracket] = []
    first = 0
    for s, n in hyperband_brackets(length, eta, max_rungs):
        r = max(scaled_down(length, eta, s), 1)
        lengths = [int(r * eta**k) for k in range(s)] + [length]
        sizes = [scaled_down(n, eta, k) for k in range(s + 1)]
        brackets.append(Bracket(s, lengths, sizes, first))
        first += n
    return brackets


class HyperbandSearcher(Searcher):
    kind = KIND

    def __init__(self, config: HyperbandConfig, space: dict[str, Any], seed: int) -> None:
        self.options = SearcherOptions.of(config)
        self.divisor = exact(config.divisor)
        length = self.options.require_length()
        self.brackets = plan_brackets(length, self.divisor, config.max_rungs)
        self.total_trials = sum(b.sizes[0] for b in self.brackets)
        self.space = space
        self.seed = seed
        self._starts = [b.first_index for b in self.brackets]
        self._started = False
        self._shutdown_sent = False
        self._next_index = 0
        # request_id -> {"index", "bracket", "rung", "status", "stopped", "reached", "time",
        #   "score", "note", "exit"}
        self._trials: dict[str, dict[str, Any]] = {}
        # per bracket, per rung: {"members": [ids], "scores": {id: loss}, "pending", "decided"}
        self._rungs: list[list[dict[str, Any]]] = [
            [
                {"members": [], "scores": {}, "pending": size if k == 0 else 0, "decided": False}
                for k, size in enumerate(b.sizes)
            ]
            for b in self.brackets
        ]
        self._resume: deque[tuple[str, int]] = deque()  # promoted, waiting for a free slot
        self._derive_counts()

    # --- the Searcher interface -----------------------------------------------------------

    def create_trials(self) -> list[TrialRequest]:
        if self._started:
            raise ValueError(f"{self.kind} searcher: create_trials() was already called")
        self._started = True
        return [a.request for a in self._fill() if isinstance(a, Create)]

    def on_validation(
        self, request_id: str, metrics: dict[str, Any], steps_completed: int
    ) -> list[Action]:
        trial = self._trial(request_id)
        if trial["status"] != TRAINING or trial["stopped"] or trial["reached"]:
            return []
        bracket = self.brackets[trial["bracket"]]
        reading = read_validation(self.options, metrics, steps_completed)
        actions: list[Action] = []
        if reading.time is None:
            assert reading.missing_time is not None
            trial.update(stopped=True, note=reading.missing_time)
            actions.append(Stop(request_id, reading.missing_time))
            if trial["rung"] < bracket.top:
                self._arrive(trial, request_id, WORST, actions)
        elif trial["rung"] < bracket.top and reading.time >= bracket.lengths[trial["rung"]]:
            trial.update(status=WAITING, time=reading.time, score=reading.score)
            if reading.note:
                trial["note"] = reading.note
            self._training -= 1
            self._arrive(trial, request_id, reading.score, actions)
        return actions + self._fill()

    def on_trial_exit(self, request_id: str, reason: ExitReason) -> list[Action]:
        trial = self._trial(request_id)
        reason = ExitReason(reason)
        if trial["status"] == EXITED:
            raise ValueError(
                f"{self.kind} searcher: trial request {request_id!r} already exited "
                f"({trial['exit']})"
            )
        if trial["status"] == TRAINING:
            self._training -= 1
        trial.update(status=EXITED, exit=reason.value)
        self._exited += 1
        self._errored += int(reason == ExitReason.ERRORED)
        actions: list[Action] = []
        b, k = trial["bracket"], trial["rung"]
        rung = self._rungs[b][k]
        overshot = reason == ExitReason.COMPLETED and trial["reached"]  # to the full length
        if k < self.brackets[b].top and not rung["decided"] and not overshot:
            # It left its rung before the decision: the worst value, so it never takes the
            # place of a trial still in the search.
            if not trial["stopped"]:
                trial["note"] = exit_note(reason.value, k, self.brackets[b].lengths[k])
            if trial["reached"]:
                rung["scores"][request_id] = WORST
            else:
                self._arrive(trial, request_id, WORST, actions)
        actions += self._fill()
        if (
            not self._shutdown_sent
            and self._next_index == self.total_trials
            and self._exited == self.total_trials
        ):
            self._shutdown_sent = True
            actions.append(Shutdown(failure=self._errored == self.total_trials))
        return actions

    def progress(self) -> float:
        return self._exited / self.total_trials

    def trial_summary(self, request_id: str) -> dict[str, Any]:
        trial = self._trials.get(request_id)
        if trial is None:
            return {}
        info: dict[str, Any] = {"bracket": trial["bracket"], "rung": trial["rung"]}
        if trial["note"]:
            info["note"] = trial["note"]
        return info

    def summary(self) -> dict[str, Any]:
        return {
            "brackets": [
                {
                    "bracket": b,
                    "trials": bracket.sizes[0],
                    "rungs": [
                        {
                            "rung": k,
                            "length": bracket.lengths[k],
                            "trials": bracket.sizes[k],
                            "reached": len(rung["scores"]),
                            "decided": rung["decided"],
                        }
                        for k, rung in enumerate(self._rungs[b])
                    ],
                }
                for b, bracket in enumerate(self.brackets)
            ]
        }

    def get_state(self) -> dict[str, Any]:
        return {
            "searcher": self.kind,
            "started": self._started,
            "shutdown_sent": self._shutdown_sent,
            "next_index": self._next_index,
            "trials": copy.deepcopy(self._trials),
            "rungs": copy.deepcopy(self._rungs),
            "resume": [list(item) for item in self._resume],
        }

    def set_state(self, state: dict[str, Any]) -> None:
        if state.get("searcher") != self.kind:
            raise ValueError(
                f"{self.kind} searcher: cannot resume from the state of a "
                f"{state.get('searcher')!r} searcher"
            )
        if [len(b) for b in state["rungs"]] != [len(b.lengths) for b in self.brackets]:
            raise ValueError(f"{self.kind} searcher: the state comes from another config")
        self._started = bool(state["started"])
        self._shutdown_sent = bool(state["shutdown_sent"])
        self._next_index = int(state["next_index"])
        self._trials = copy.deepcopy(state["trials"])
        self._rungs = copy.deepcopy(state["rungs"])
        self._resume = deque((rid, int(target)) for rid, target in state["resume"])
        self._derive_counts()

    # --- rungs ----------------------------------------------------------------------------

    def _arrive(
        self, trial: dict[str, Any], request_id: str, score: float, actions: list[Action]
    ) -> None:
        """The trial is done with its rung (reached the length, or left): decide the rung
        when it was the last one pending."""
        b, k = trial["bracket"], trial["rung"]
        rung = self._rungs[b][k]
        rung["scores"][request_id] = score
        trial["reached"] = True
        rung["pending"] -= 1
        if rung["pending"] == 0:
            self._decide(b, k, actions)

    def _decide(self, b: int, k: int, actions: list[Action]) -> None:
        bracket, rung = self.brackets[b], self._rungs[b][k]
        rung["decided"] = True
        keep = bracket.sizes[k + 1]

        def rank(request_id: str) -> tuple[float, int, int]:
            trial = self._trials[request_id]
            gone = trial["status"] == EXITED or trial["stopped"]
            return (rung["scores"][request_id], int(gone), trial["index"])

        ranking = sorted(rung["members"], key=rank)
        promoted: list[str] = []
        for place, request_id in enumerate(ranking):
            trial = self._trials[request_id]
            if trial["status"] == EXITED or trial["stopped"]:
                continue
            if place < keep:
                promoted.append(request_id)
                continue
            trial["stopped"] = True
            actions.append(
                Stop(
                    request_id,
                    f"hyperband bracket {b} rung {k}: ranked {place + 1} of {len(ranking)}, "
                    f"{keep} go{'es' if keep == 1 else ''} on",
                )
            )
        self._promote(b, k + 1, promoted, actions)

    def _promote(self, b: int, k: int, promoted: list[str], actions: list[Action]) -> None:
        bracket, rung = self.brackets[b], self._rungs[b][k]
        rung["members"] = promoted
        rung["pending"] = len(promoted)
        target = bracket.lengths[k]
        for request_id in promoted:
            trial = self._trials[request_id]
            trial.update(rung=k, reached=False)
            if k < bracket.top and trial["time"] >= target:
                # Its last validation already passed this rung too: no need to train.
                rung["scores"][request_id] = trial["score"]
                trial["reached"] = True
                rung["pending"] -= 1
            else:
                self._resume.append((request_id, target))
        if k < bracket.top and rung["pending"] == 0:
            self._decide(b, k, actions)

    # --- trials ---------------------------------------------------------------------------

    def _fill(self) -> list[Action]:
        """Resume promoted trials, then start new ones, while slots are free."""
        limit = self.options.max_concurrent_trials or math.inf
        actions: list[Action] = []
        while self._resume and self._training < limit:
            request_id, target = self._resume.popleft()
            trial = self._trials[request_id]
            if trial["status"] == EXITED or trial["stopped"]:
                continue
            trial["status"] = TRAINING
            self._training += 1
            actions.append(SetTarget(request_id, target))
        while self._next_index < self.total_trials and self._training < limit:
            actions.append(Create(self._new_trial()))
        return actions

    def _new_trial(self) -> TrialRequest:
        index = self._next_index
        self._next_index += 1
        b = bisect_right(self._starts, index) - 1
        request_id = request_id_for(index)
        self._trials[request_id] = {
            "index": index,
            "bracket": b,
            "rung": 0,
            "status": TRAINING,
            "stopped": False,
            "reached": False,
            "time": None,
            "score": None,
            "note": None,
            "exit": None,
        }
        self._rungs[b][0]["members"].append(request_id)
        self._training += 1
        hparams = sample_point(self.space, rng_for_trial(self.seed, index))
        return TrialRequest(request_id, hparams, target=self.brackets[b].lengths[0])

    def _trial(self, request_id: str) -> dict[str, Any]:
        return known_trial(self._trials, request_id, self.kind, self._next_index)

    def _derive_counts(self) -> None:
        statuses = [t["status"] for t in self._trials.values()]
        self._training = statuses.count(TRAINING)
        self._exited = statuses.count(EXITED)
        self._errored = sum(1 for t in self._trials.values() if t["exit"] == "ERRORED")
