"""pbt: Determined's population-based training, in synchronous rounds.

A population of trials trains round by round. When every member of the population has
reported a validation at its round target (or has left the round: exited, or stopped for a
validation without the time metric), the searcher ranks the round: the bottom
floor(truncate_fraction * members) are stopped and replaced by copies of the top ones (a new
trial started from the parent's latest checkpoint, with explored hyperparameters), and the
others train one more round. Trials that left the round rank at the bottom, so they are
the first replaced; when more of them left than are replaced, the population shrinks.

The whole population is created at once, as in Determined; max_concurrent_trials is left to
the scheduler (a trial waiting for the round's end holds no slot, so rounds complete under
any limit).

Rounds are numbered from 1 here (round k trains up to k * length_per_round); preview_plan's
rungs are numbered from 0, as every searcher's preview numbers them.

Exploring a log hyperparameter multiplies its value (not its exponent) by 1 +- perturb_factor,
as Determined does; clipping is to [base**minval, base**maxval].

A round's decision comes as the Stops, then the Creates, then the SetTargets: a parent is
still waiting at its round target when its child is created, so the server takes the
checkpoint the child starts from before the parent trains on.

Cost: a validation that does not end a round is O(1), a few microseconds. The one that
ends it ranks the population and answers every member: about 20 us a member (1.5 ms for a
population of 100, 20 ms for 1,000), most of it exploring the replacements' points.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import random
from typing import Any

from shipyard.common.config.searcher import PbtSearcher as PbtConfig
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
from shipyard.search.pbt_explore import copy_point, explore_point
from shipyard.search.population import known_trial, request_id_for
from shipyard.search.rungs import WORST, fmt, read_validation
from shipyard.search.sampling import rng_for_trial, sample_point

KIND = "pbt"


def replaced_per_round(config: PbtConfig, members: int) -> int:
    return math.floor(config.replace_function.truncate_fraction * members)


# --- the searcher ---------------------------------------------------------------------------


def _explore_rng(seed: int, index: int) -> random.Random:
    return random.Random(f"shipyard/pbt/{seed}/{index}")


class PbtSearcher(Searcher):
    """Population-based training; see the module docstring for the round rules."""

    def __init__(self, config: PbtConfig, space: dict[str, Any], seed: int) -> None:
        options = SearcherOptions.of(config)
        self.config = config
        self.length_per_round = config.length_per_round.value
        # The config sets no max_length: the full length is the rounds'. Kept as the options'
        # length for the tools that read it there (the simulator, previews).
        full = config.training_length()
        if options.time_metric:
            self.options = dataclasses.replace(options, max_time=full)
        else:
            self.options = dataclasses.replace(options, max_length=full)
        self.space = space
        self.seed = seed
        self._started = False
        self._shutdown_sent = False
        self._round = 1
        self._next_index = 0
        self._members: list[str] = []  # the request ids of the current round
        # request_id -> {"index", "hparams", "parent", "generation", "created_round", "round",
        #   "target", "score", "reached", "stopped", "exit", "note"}
        self._trials: dict[str, dict[str, Any]] = {}
        # derived from the above (recomputed by set_state), kept for O(1) decisions
        self._pending = 0  # members of the round that neither reached the target nor left
        self._exited = 0

    # --- the Searcher interface -----------------------------------------------------------

    def create_trials(self) -> list[TrialRequest]:
        if self._started:
            raise ValueError(f"{KIND} searcher: create_trials() was already called")
        self._started = True
        requests = []
        for _ in range(self.config.population_size):
            index = self._next_index
            hparams = sample_point(self.space, rng_for_trial(self.seed, index))
            requests.append(self._new_trial(hparams, None, self.length_per_round))
        self._members = [request.request_id for request in requests]
        self._pending = len(self._members)
        return requests

    def on_validation(
        self, request_id: str, metrics: dict[str, Any], steps_completed: int
    ) -> list[Action]:
        trial = self._trial(request_id)
        if not self._in_round(trial):
            return []  # waiting for the round's end, stopped or exited: nothing to decide
        reading = read_validation(self.options, metrics, steps_completed)
        if reading.time is None:
            trial.update(stopped=True, note=reading.missing_time)
            return [Stop(request_id, str(reading.missing_time)), *self._leave_round()]
        if reading.time < trial["target"]:
            return []
        trial.update(reached=True, score=reading.score)
        if reading.note:
            trial["note"] = reading.note
        return self._leave_round()

    def on_trial_exit(self, request_id: str, reason: ExitReason) -> list[Action]:
        trial = self._trial(request_id)
        if trial["exit"] is not None:
            raise ValueError(
                f"{KIND} searcher: trial request {request_id!r} already exited ({trial['exit']})"
            )
        was_in_round = self._in_round(trial)
        exit_reason = ExitReason(reason).value
        trial["exit"] = exit_reason
        self._exited += 1
        actions: list[Action] = []
        if was_in_round:
            trial["note"] = (
                f"{exit_reason.lower()} in round {trial['round']} before length "
                f"{trial['target']}: counted as the worst value"
            )
            actions = self._leave_round()
        if self._exited == len(self._trials) and not self._shutdown_sent:
            self._shutdown_sent = True
            all_errored = all(t["exit"] == ExitReason.ERRORED for t in self._trials.values())
            actions.append(Shutdown(failure=all_errored))
        return actions

    def progress(self) -> float:
        if self._shutdown_sent:
            return 1.0
        if not self._members:
            return (self._round - 1) / self.config.num_rounds
        done = 1 - self._pending / len(self._members)
        return min((self._round - 1 + done) / self.config.num_rounds, 1.0)

    def trial_summary(self, request_id: str) -> dict[str, Any]:
        trial = self._trials.get(request_id)
        if trial is None:
            return {}
        summary = {
            "round": trial["round"],
            "parent": trial["parent"],
            "generation": trial["generation"],
        }
        if trial["note"]:
            summary["note"] = trial["note"]
        return summary

    def summary(self) -> dict[str, Any]:
        return {
            "lineage": [
                {"request_id": rid, "parent": t["parent"], "round": t["created_round"]}
                for rid, t in self._trials.items()
            ]
        }

    def get_state(self) -> dict[str, Any]:
        return {
            "searcher": KIND,
            "started": self._started,
            "shutdown_sent": self._shutdown_sent,
            "round": self._round,
            "next_index": self._next_index,
            "members": list(self._members),
            "trials": copy.deepcopy(self._trials),
        }

    def set_state(self, state: dict[str, Any]) -> None:
        if state.get("searcher") != KIND:
            raise ValueError(
                f"{KIND} searcher: cannot resume from the state of a "
                f"{state.get('searcher')!r} searcher"
            )
        self._started = bool(state["started"])
        self._shutdown_sent = bool(state["shutdown_sent"])
        self._round = int(state["round"])
        self._next_index = int(state["next_index"])
        self._members = list(state["members"])
        # json keeps insertion order: the trials stay in creation order
        self._trials = copy.deepcopy(state["trials"])
        self._pending = sum(1 for rid in self._members if self._in_round(self._trials[rid]))
        self._exited = sum(1 for t in self._trials.values() if t["exit"] is not None)

    # --- rounds -----------------------------------------------------------------------------

    def _in_round(self, trial: dict[str, Any]) -> bool:
        """Still expected to report at its round target: it counts as pending."""
        return (
            trial["round"] == self._round
            and not trial["reached"]
            and not trial["stopped"]
            and trial["exit"] is None
        )

    def _leave_round(self) -> list[Action]:
        """One member of the round reached its target or left; the last one ends the round."""
        self._pending -= 1
        if self._pending > 0 or self._round >= self.config.num_rounds:
            return []  # in the last round the trials complete by themselves
        return self._end_round()

    def _end_round(self) -> list[Action]:
        def rank(request_id: str) -> tuple[float, int]:
            trial = self._trials[request_id]
            return (trial["score"] if self._live(trial) else WORST, trial["index"])

        ranked = sorted(self._members, key=rank)
        replaced = replaced_per_round(self.config, len(ranked))
        cut = len(ranked) - replaced
        parents = [rid for rid in ranked[:replaced] if self._live(self._trials[rid])]
        losers = list(reversed(ranked[cut:]))  # worst first: it gets the best parent
        percent = f"{fmt(self.config.replace_function.truncate_fraction * 100)}%"
        stops: list[Action] = []
        creates: list[Action] = []
        children: list[str] = []
        for position, loser in enumerate(losers):
            reason = f"pbt round {self._round}: in the bottom {percent}, "
            if parents:
                parent = parents[position % len(parents)]
                request = self._child_of(parent)
                children.append(request.request_id)
                creates.append(Create(request))
                reason += f"replaced by {request.request_id} from {parent}"
            else:
                reason += "not replaced: no trial of the round is left to copy"
            if self._live(self._trials[loser]):
                self._trials[loser]["stopped"] = True
                stops.append(Stop(loser, reason))
        survivors = [rid for rid in ranked[:cut] if self._live(self._trials[rid])]
        self._round += 1
        targets: list[Action] = []
        for rid in sorted(survivors, key=lambda r: self._trials[r]["index"]):
            trial = self._trials[rid]
            trial.update(
                round=self._round,
                target=trial["target"] + self.length_per_round,
                reached=False,
                score=WORST,
            )
            targets.append(SetTarget(rid, trial["target"]))
        self._members = sorted(survivors, key=lambda r: self._trials[r]["index"]) + children
        self._pending = len(self._members)
        return stops + creates + targets

    @staticmethod
    def _live(trial: dict[str, Any]) -> bool:
        return trial["exit"] is None and not trial["stopped"]

    def _child_of(self, parent_id: str) -> TrialRequest:
        parent = self._trials[parent_id]
        hparams = explore_point(
            self.space,
            parent["hparams"],
            _explore_rng(self.seed, self._next_index),
            resample_probability=self.config.explore_function.resample_probability,
            perturb_factor=self.config.explore_function.perturb_factor,
        )
        target = parent["target"] + self.length_per_round
        return self._new_trial(hparams, parent_id, target)

    def _new_trial(
        self, hparams: dict[str, Any], parent_id: str | None, target: int
    ) -> TrialRequest:
        index = self._next_index
        self._next_index += 1
        request_id = request_id_for(index)
        parent = self._trials[parent_id] if parent_id else None
        round_ = self._round + 1 if parent else self._round
        self._trials[request_id] = {
            "index": index,
            "hparams": hparams,
            "parent": parent_id,
            "generation": parent["generation"] + 1 if parent else 0,
            "created_round": round_,
            "round": round_,
            "target": target,
            "score": WORST,
            "reached": False,
            "stopped": False,
            "exit": None,
            "note": None,
        }
        return TrialRequest(request_id, copy_point(hparams), target, parent_id)

    def _trial(self, request_id: str) -> dict[str, Any]:
        return known_trial(self._trials, request_id, KIND, len(self._trials))


# --- preview --------------------------------------------------------------------------------


def preview_plan(config: PbtConfig, space: dict[str, Any]) -> dict[str, Any]:
    """What a pbt search will run, before it runs: trials, and compute in time units
    (assuming no trial exits early), against a random search of as many trials each
    trained to the full length."""
    population, rounds, length = (
        config.population_size,
        config.num_rounds,
        config.length_per_round.value,
    )
    total_trials = population + (rounds - 1) * replaced_per_round(config, population)
    compute = rounds * population * length
    random_compute = total_trials * rounds * length
    return {
        "searcher": KIND,
        "unit": config.time_metric or "steps",
        "brackets": [
            {
                "bracket": 0,
                "trials": total_trials,
                "rungs": [
                    {"rung": k, "trials": population, "length": (k + 1) * length}
                    for k in range(rounds)
                ],
                "compute": compute,
            }
        ],
        "total_trials": total_trials,
        "compute": compute,
        "random_search_compute": random_compute,
        "ratio": compute / random_compute,
    }
