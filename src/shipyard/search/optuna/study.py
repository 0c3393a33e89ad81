"""The only functions that reach into Optuna's storage (study._storage, as Optuna's own
samplers, pruners and Trial do): system attrs have no public setter, and reporting or
pruning through optuna.Trial would run the sampler's before_trial hook again. And the
study as JSON, for the searcher's state."""

from __future__ import annotations

import copy
import math
from typing import TYPE_CHECKING, Any

from shipyard.search.optuna.extras import quiet

if TYPE_CHECKING:
    import optuna


def _trial_id(study: optuna.Study, number: int) -> int:
    return study._storage.get_trial_id_from_study_id_trial_number(study._study_id, number)


def report_intermediate(study: optuna.Study, number: int, step: int, value: float) -> None:
    """Trial.report without a Trial: the first report of a step counts, as there."""
    storage, trial_id = study._storage, _trial_id(study, number)
    if step not in storage.get_trial(trial_id).intermediate_values:
        storage.set_trial_intermediate_value(trial_id, step, value)


def should_prune(study: optuna.Study, number: int) -> bool:
    """Trial.should_prune without a Trial: the study's pruner on the trial as stored."""
    frozen = study._storage.get_trial(_trial_id(study, number))
    with quiet():
        return bool(study.pruner.prune(study, frozen))


def study_snapshot(study: optuna.Study) -> dict[str, Any]:
    """Everything a sampler or pruner reads from the study, as JSON (NaN as None)."""
    trials = []
    for trial in study.get_trials(deepcopy=False):
        trials.append(
            {
                "state": trial.state.name,
                "params": {
                    name: trial.distributions[name].to_internal_repr(value)
                    for name, value in trial.params.items()
                },
                "values": list(trial.values) if trial.values is not None else None,
                "intermediate": {
                    str(step): value if math.isfinite(value) else None
                    for step, value in trial.intermediate_values.items()
                },
                "system_attrs": copy.deepcopy(dict(trial.system_attrs)),
            }
        )
    attrs = study._storage.get_study_system_attrs(study._study_id)
    return {"system_attrs": copy.deepcopy(attrs), "trials": trials}


def restore_study(
    study: optuna.Study, snapshot: dict[str, Any], distributions: dict[str, Any]
) -> None:
    """Fill an empty study from study_snapshot(): the trials keep their numbers and ids."""
    from optuna.trial import TrialState, create_trial

    for key, value in snapshot["system_attrs"].items():
        study._storage.set_study_system_attr(study._study_id, key, value)
    for trial in snapshot["trials"]:
        used = {name: distributions[name] for name in trial["params"]}
        study.add_trial(
            create_trial(
                state=TrialState[trial["state"]],
                params={
                    name: used[name].to_external_repr(value)
                    for name, value in trial["params"].items()
                },
                distributions=used,
                values=trial["values"],
                intermediate_values={
                    int(step): math.nan if value is None else value
                    for step, value in trial["intermediate"].items()
                },
                system_attrs=trial["system_attrs"],
            )
        )
