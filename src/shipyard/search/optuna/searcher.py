"""The optuna searcher: Optuna's ask/tell behind the Searcher interface (the rules are in
the package docstring)."""

from __future__ import annotations

import copy
import dataclasses
import math
from typing import TYPE_CHECKING, Any

from shipyard.common.config.searcher import OptunaSearcher as OptunaConfig
from shipyard.common.config.searcher.optuna import (
    AshaPruner,
    HyperbandPruner,
    SuccessiveHalvingPruner,
)
from shipyard.common.config.searcher.rung_math import exact
from shipyard.search.asha import AshaBracket
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
from shipyard.search.optuna.extras import import_optuna, quiet
from shipyard.search.optuna.factories import make_pruner, make_sampler, sampler_seed
from shipyard.search.optuna.space import flatten_space, to_distributions, to_hparams
from shipyard.search.optuna.study import (
    report_intermediate,
    restore_study,
    should_prune,
    study_snapshot,
)
from shipyard.search.population import known_trial, request_id_for
from shipyard.search.rungs import fmt, read_validation

if TYPE_CHECKING:
    import optuna

KIND = "optuna"


def halving_steps(config: OptunaConfig) -> list[int]:
    """The targets of a successive_halving or hyperband trial: every
    min_resource * reduction_factor**k below the length, then the length."""
    pruner = config.pruner
    length = config.training_length()
    assert length is not None  # a pruner needs a length: the config model checked it
    assert isinstance(pruner, SuccessiveHalvingPruner | HyperbandPruner)
    steps: list[int] = []
    step = pruner.min_resource
    while step < length:
        steps.append(step)
        step *= pruner.reduction_factor
    return [*steps, length]


class OptunaSearcher(Searcher):
    """Optuna's ask/tell; see the module docstring for the rules."""

    def __init__(self, config: OptunaConfig, space: dict[str, Any], seed: int) -> None:
        self.config = config
        self.options = SearcherOptions.of(config)
        self.objectives = config.objective_list()
        self.max_trials = config.max_trials
        # trials unfinished at once; 0: no limit, as for every searcher
        self.concurrency = min(config.max_concurrent_trials or self.max_trials, self.max_trials)
        import_optuna(config.sampler)
        self.space = space
        self.seed = seed
        self._distributions = to_distributions(flatten_space(space))
        # The value of each objective, read as is (Optuna gets the directions).
        self._readers = [
            dataclasses.replace(self.options, metric=o.metric, smaller_is_better=True)
            for o in self.objectives
        ]
        pruner = config.pruner
        self._bracket: AshaBracket | None = None
        if isinstance(pruner, AshaPruner):
            self._bracket = AshaBracket(
                self.options,
                exact(pruner.divisor),
                pruner.num_rungs,
                self.max_trials,
                self.concurrency,
            )
        self._halving_steps = (
            halving_steps(config) if pruner.name in ("successive_halving", "hyperband") else []
        )
        self._study = self._new_study()
        self._started = False
        self._shutdown_sent = False
        # request_id -> {"number", "target", "rung", "values" (the last validation's, None
        #   for an unusable one), "stop" (None | "pruned" | "time_metric"), "exit", "note"}
        self._trials: dict[str, dict[str, Any]] = {}
        self._exited = 0  # derived, recomputed by set_state

    @property
    def multi_objective(self) -> bool:
        return len(self.objectives) > 1

    @property
    def study(self) -> optuna.Study:
        """The in-memory Optuna study, to inspect (its trials' states, values, params);
        changing it is changing the search."""
        return self._study

    # --- the Searcher interface -----------------------------------------------------------

    def create_trials(self) -> list[TrialRequest]:
        if self._started:
            raise ValueError(f"{KIND} searcher: create_trials() was already called")
        self._started = True
        return [self._ask() for _ in range(self.concurrency)]

    def on_validation(
        self, request_id: str, metrics: dict[str, Any], steps_completed: int
    ) -> list[Action]:
        trial = self._trial(request_id)
        if trial["exit"] is not None or trial["stop"] is not None:
            return []  # a late validation: nothing left to decide
        time = self.options.time_of(metrics, steps_completed)
        self._record_values(trial, metrics, time, steps_completed)
        pruner = self.config.pruner.name
        if pruner == "none":
            return []  # the trial trains to the full length; its time does not matter
        if time is not None:
            self._report(trial, time)
        if self._bracket is not None:
            actions = self._bracket.on_validation(request_id, metrics, steps_completed)
            trial["rung"] = self._bracket.trial_summary(request_id)["rung"]
            for action in actions:
                if isinstance(action, Stop) and time is None:
                    trial.update(stop="time_metric", note=action.reason)
                elif isinstance(action, Stop):
                    trial["stop"] = "pruned"
            return actions
        if time is None:
            reason = str(read_validation(self.options, metrics, steps_completed).missing_time)
            trial.update(stop="time_metric", note=reason)
            return [Stop(request_id, reason)]
        if should_prune(self._study, trial["number"]):
            trial["stop"] = "pruned"
            name = type(self._study.pruner).__name__
            return [Stop(request_id, f"pruned by Optuna's {name} at time {fmt(time)}")]
        return self._next_target(trial, time)

    def on_trial_exit(self, request_id: str, reason: ExitReason) -> list[Action]:
        trial = self._trial(request_id)
        if trial["exit"] is not None:
            raise ValueError(
                f"{KIND} searcher: trial request {request_id!r} already exited ({trial['exit']})"
            )
        reason = ExitReason(reason)
        trial["exit"] = reason.value
        self._exited += 1
        if self._bracket is not None:
            self._bracket.on_exit(request_id, reason)
        self._tell(trial, reason)
        actions: list[Action] = []
        if len(self._trials) < self.max_trials:
            actions.append(Create(self._ask()))
        elif self._exited == len(self._trials) and not self._shutdown_sent:
            self._shutdown_sent = True
            all_errored = all(t["exit"] == ExitReason.ERRORED for t in self._trials.values())
            actions.append(Shutdown(failure=all_errored))
        return actions

    def progress(self) -> float:
        return 1.0 if self._shutdown_sent else self._exited / self.max_trials

    def trial_summary(self, request_id: str) -> dict[str, Any]:
        trial = self._trials.get(request_id)
        if trial is None:
            return {}
        summary: dict[str, Any] = {"optuna_number": trial["number"]}
        if trial["rung"] is not None:
            summary["rung"] = trial["rung"]
        if trial["note"]:
            summary["note"] = trial["note"]
        return summary

    def summary(self) -> dict[str, Any]:
        if self.multi_objective:
            front = sorted(self._study.best_trials, key=lambda t: t.number)
            return {
                "pareto_front": [
                    {"request_id": request_id_for(t.number), "values": list(t.values)}
                    for t in front
                ]
            }
        from optuna.trial import TrialState

        summary: dict[str, Any] = {"best": None}
        if self._study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
            best = self._study.best_trial
            summary["best"] = {"request_id": request_id_for(best.number), "value": best.value}
        if self._bracket is not None:
            summary["rungs"] = self._bracket.summary()["rungs"]
        return summary

    def get_state(self) -> dict[str, Any]:
        return {
            "searcher": KIND,
            "started": self._started,
            "shutdown_sent": self._shutdown_sent,
            "trials": copy.deepcopy(self._trials),
            "bracket": self._bracket.get_state() if self._bracket is not None else None,
            "study": study_snapshot(self._study),
        }

    def set_state(self, state: dict[str, Any]) -> None:
        if state.get("searcher") != KIND:
            raise ValueError(
                f"{KIND} searcher: cannot resume from the state of a "
                f"{state.get('searcher')!r} searcher"
            )
        self._started = bool(state["started"])
        self._shutdown_sent = bool(state["shutdown_sent"])
        self._trials = copy.deepcopy(state["trials"])
        self._exited = sum(1 for t in self._trials.values() if t["exit"] is not None)
        if self._bracket is not None:
            self._bracket.set_state(state["bracket"])
        self._study = self._new_study()
        with quiet():
            restore_study(self._study, state["study"], self._distributions)

    # --- Optuna calls -----------------------------------------------------------------------

    def _new_study(self) -> optuna.Study:
        import optuna
        from optuna.study import StudyDirection

        directions = [
            StudyDirection.MINIMIZE if o.smaller_is_better else StudyDirection.MAXIMIZE
            for o in self.objectives
        ]
        with quiet():
            return optuna.create_study(
                study_name=f"shipyard-{self.seed}",  # hyperband hashes it: keep it fixed
                directions=directions,
                sampler=make_sampler(self.config, sampler_seed(self.seed, -1)),
                pruner=make_pruner(self.config),
            )

    def _ask(self) -> TrialRequest:
        number = len(self._trials)
        with quiet():
            self._study.sampler = make_sampler(self.config, sampler_seed(self.seed, number))
            asked = self._study.ask(self._distributions)
        if asked.number != number:
            raise RuntimeError(f"optuna asked trial {asked.number}, expected {number}")
        request_id = request_id_for(number)
        target: int | None = None
        if self._bracket is not None:
            target = self._bracket.add(request_id)
        elif self._halving_steps:
            target = self._halving_steps[0]
        self._trials[request_id] = {
            "number": number,
            "target": target,
            "rung": None if target is None else 0,
            "values": None,
            "stop": None,
            "exit": None,
            "note": None,
        }
        return TrialRequest(request_id, to_hparams(self.space, asked.params), target)

    def _record_values(
        self, trial: dict[str, Any], metrics: dict[str, Any], time: float | None, steps: int
    ) -> None:
        """Keep the validation's value of each objective (None: unusable, noted)."""
        values = [reader.score_of(metrics) for reader in self._readers]
        trial["values"] = values
        for reader, value in zip(self._readers, values, strict=True):
            if value is None:
                metric = reader.metric
                got = f"reported {metrics[metric]!r} for" if metric in metrics else "reported no"
                when = f"time {fmt(time)}" if time is not None else f"step {steps}"
                trial["note"] = f"{got} {metric!r} at {when}: counted as the worst value"
                return

    def _report(self, trial: dict[str, Any], time: float) -> None:
        """The first objective as the intermediate value at step = time; an unusable value
        as NaN, which Optuna's pruners count as the worst."""
        if not self.multi_objective:
            value = trial["values"][0]
            report_intermediate(
                self._study, trial["number"], int(time), math.nan if value is None else value
            )

    def _next_target(self, trial: dict[str, Any], time: float) -> list[Action]:
        """successive_halving/hyperband: not pruned at its target: on to the next step."""
        target = trial["target"]
        length = self._halving_steps[-1] if self._halving_steps else None
        if target is None or length is None or time < target or target >= length:
            return []
        upcoming = [step for step in self._halving_steps if step > time]
        trial["target"] = upcoming[0] if upcoming else length
        trial["rung"] = self._halving_steps.index(trial["target"])
        return [SetTarget(self._request_id(trial), trial["target"])]

    def _tell(self, trial: dict[str, Any], reason: ExitReason) -> None:
        from optuna.trial import TrialState

        values = trial["values"]
        if reason == ExitReason.COMPLETED and values and None not in values:
            state, told = TrialState.COMPLETE, values
        elif reason == ExitReason.COMPLETED:
            state, told = TrialState.FAIL, None
            if values is None:
                trial["note"] = "completed without a validation: told Optuna it failed"
        elif trial["stop"] == "pruned":
            state, told = TrialState.PRUNED, None
        else:
            state, told = TrialState.FAIL, None
            if trial["note"] is None:
                trial["note"] = f"{reason.value.lower()}: told Optuna it failed (the worst value)"
        with quiet():
            self._study.tell(trial["number"], told, state=state)

    # --- helpers ----------------------------------------------------------------------------

    @staticmethod
    def _request_id(trial: dict[str, Any]) -> str:
        return request_id_for(trial["number"])

    def _trial(self, request_id: str) -> dict[str, Any]:
        return known_trial(self._trials, request_id, KIND, len(self._trials))
