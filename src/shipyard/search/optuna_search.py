"""optuna: Optuna's samplers and pruners behind the Searcher interface, via ask/tell.

Optuna is an optional extra (pip install 'shipyard[optuna]'): it is imported when an optuna
searcher is built, never when this module is, so the registry can list the searcher on an
install without it and refuse it with a message naming the extra.

How Shipyard's events become Optuna calls:
- a free slot: study.ask() with every hyperparameter as a fixed distribution (int ->
  IntDistribution, double -> FloatDistribution, log -> FloatDistribution(base**minval,
  base**maxval, log=True), categorical -> CategoricalDistribution over the value indices,
  so values may be lists or dicts; const is not asked; object members get dotted names);
- a validation: its values are kept; with a pruner, the first objective is reported as the
  intermediate value at step = the trial's time, and the pruner is asked;
- an exit: study.tell(): COMPLETED -> COMPLETE with the last validation's values (a missing,
  NaN or inf value -> FAIL, with a note); STOPPED by the pruner -> PRUNED; anything else
  (errored, canceled, stopped for lacking the time_metric) -> FAIL, i.e. the worst value.

Pruners. median and percentile are asked at every validation and trials train to the full
length (target None). asha uses Determined's rung rules (asha.AshaBracket): a trial trains
rung by rung and is stopped or sent on when it reaches each rung. successive_halving and
hyperband are Optuna's, asked at every validation; their trials also get targets, at every
min_resource * reduction_factor**k below the length (the steps where those pruners decide,
for every hyperband bracket), so a trial reports exactly where a decision is due and does
not train past it first. Pruning needs a length and a single objective (Optuna cannot prune
a multi-objective study). Steps are the searcher's time unit (n_warmup_steps too).

Concurrency: max_concurrent_trials defaults to 4 here (0 is no limit, as everywhere). Optuna
learns from finished trials; asking for every trial at once makes any sampler a random search.
nsga2's generation holds max(2, min(50, max_trials // 5)) trials, so a search of a few dozen
trials still sees several generations (Optuna's default of 50 would see one).

Determinism and restarts. Each ask uses a fresh sampler seeded from (seed, trial number),
so no sampler carries state from one ask to the next in memory; what samplers keep between
asks, Optuna keeps in the study (trial and study system attrs: CMA-ES's pickled optimizer,
NSGA-II's generations and parent cache, successive halving's rung values). get_state holds
the study (per trial: state, params in Optuna's internal representation, values,
intermediate values, system attrs; and the study's system attrs) and set_state rebuilds an
in-memory study from it (optuna.trial.create_trial + study.add_trial, RUNNING trials too).
So a searcher restored from its JSON state asks the same points as the uninterrupted one:
exactly for random, tpe, cmaes and nsga2 (the same numpy computation on the same history);
for gp, up to the floating-point reproducibility of torch and scipy's L-BFGS on the same
machine, library versions and thread count. Pruning decisions are a function of the study,
hence restored exactly too (hyperband's bracket of a trial hashes the study name, which is
fixed per seed).

Cost: an exit asks the sampler for the next trial, and takes what the sampler takes; with
200 trials: ~1 ms for random, ~5 ms for cmaes and nsga2, ~10 ms for tpe, and a second or
more for gp (a Gaussian process fit and an acquisition search, whatever the history). A
validation costs a pruner call (well under 1 ms). set_state rebuilds the study, ~0.2 ms a
trial; the server keeps a live searcher between events and rebuilds only after a restart.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import math
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from shipyard.common.errors import ConfigError, NotSupportedYet
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
from shipyard.search.population import known_trial, request_id_for
from shipyard.search.rungs import (
    Divisor,
    check_reachable,
    config_error,
    fmt,
    read_choice,
    read_divisor,
    read_validation,
    rung_lengths,
    unit_of,
)
from shipyard.search.sampling import validate_space

if TYPE_CHECKING:
    import optuna

KIND = "optuna"
SAMPLERS = ("tpe", "cmaes", "gp", "random", "nsga2")  # the first is the default
MULTI_OBJECTIVE_SAMPLERS = ("tpe", "nsga2", "random")
PRUNERS = ("none", "asha", "median", "percentile", "successive_halving", "hyperband")
# The fields each pruner takes besides its name.
PRUNER_FIELDS: dict[str, tuple[str, ...]] = {
    "none": (),
    "asha": ("divisor", "num_rungs"),
    "median": ("n_startup_trials", "n_warmup_steps"),
    "percentile": ("percentile", "n_startup_trials", "n_warmup_steps"),
    "successive_halving": ("min_resource", "reduction_factor"),
    "hyperband": ("min_resource", "reduction_factor"),
}
DEFAULT_CONCURRENCY = 4
OPTUNA_EXTRA = "the optuna searcher needs Optuna: pip install 'shipyard[optuna]'"
GP_EXTRA = "the gp sampler needs torch and scipy: pip install 'shipyard[optuna,torch]'"
CMAES_EXTRA = "the cmaes sampler needs cmaes: pip install 'shipyard[optuna]'"


# --- config ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Objective:
    metric: str
    smaller_is_better: bool = True


@dataclass(frozen=True)
class PrunerConfig:
    """One pruner's fields; those of other pruners keep their defaults (Optuna's, except
    where the config layer chose otherwise: reduction_factor 3 and min_resource 1 for both
    halving pruners)."""

    name: str = "none"
    divisor: Divisor = 4
    num_rungs: int = 4
    n_startup_trials: int = 5
    n_warmup_steps: int = 0
    percentile: float = 25.0
    min_resource: int = 1
    reduction_factor: int = 3


def _pruner_int(section: dict[str, Any], field: str, minimum: int, default: int) -> int:
    value = section.get(field)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise config_error(f"pruner.{field}", f"expected an integer >= {minimum}, got {value!r}")
    return value


def _pruner_divisor(section: dict[str, Any]) -> Divisor:
    """rungs.read_divisor's rules, with the error under searcher.pruner."""
    try:
        return read_divisor(section, default=4)
    except ConfigError as error:
        raise config_error("pruner.divisor", error.details[0]["message"]) from None


def _pruner_percentile(section: dict[str, Any]) -> float:
    value = section.get("percentile")
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 100:
        raise config_error("pruner.percentile", f"expected a number from 0 to 100, got {value!r}")
    return float(value)


def read_pruner(searcher: dict[str, Any]) -> PrunerConfig:
    section = searcher.get("pruner")
    if section is None:
        return PrunerConfig()
    if not isinstance(section, dict):
        raise config_error("pruner", f"expected a mapping like {{name: median}}, got {section!r}")
    name = section.get("name", "none")
    if name not in PRUNERS:
        raise config_error("pruner.name", f"expected one of {', '.join(PRUNERS)}, got {name!r}")
    fields = PRUNER_FIELDS[name]
    for field in section:
        if field != "name" and field not in fields:
            takes = f"it takes {', '.join(fields)}" if fields else "it takes no fields"
            raise config_error(f"pruner.{field}", f"not a field of the {name} pruner: {takes}")
    return PrunerConfig(
        name=name,
        divisor=_pruner_divisor(section) if name == "asha" else 4,
        num_rungs=_pruner_int(section, "num_rungs", 1, 4),
        n_startup_trials=_pruner_int(section, "n_startup_trials", 0, 5),
        n_warmup_steps=_pruner_int(section, "n_warmup_steps", 0, 0),
        percentile=_pruner_percentile(section) if name == "percentile" else 25.0,
        min_resource=_pruner_int(section, "min_resource", 1, 1),
        reduction_factor=_pruner_int(section, "reduction_factor", 2, 3),
    )


def read_objectives(searcher: dict[str, Any]) -> tuple[Objective, ...]:
    """`objectives`, or the one objective metric/smaller_is_better name."""
    raw = searcher.get("objectives")
    if raw is None:
        return ()  # SearcherOptions reads metric and smaller_is_better
    if not isinstance(raw, list) or not raw:
        raise config_error(
            "objectives",
            f"expected a non-empty list of {{metric: name, smaller_is_better: bool}}, got {raw!r}",
        )
    objectives: list[Objective] = []
    for i, item in enumerate(raw):
        path = f"objectives[{i}]"
        if not isinstance(item, dict) or set(item) - {"metric", "smaller_is_better"}:
            raise config_error(
                path, f"expected {{metric: name, smaller_is_better: bool}}, got {item!r}"
            )
        metric, smaller = item.get("metric"), item.get("smaller_is_better", True)
        if not isinstance(metric, str) or not metric:
            raise config_error(f"{path}.metric", f"expected the name of a metric, got {metric!r}")
        if not isinstance(smaller, bool):
            raise config_error(
                f"{path}.smaller_is_better", f"expected true or false, got {smaller!r}"
            )
        if any(o.metric == metric for o in objectives):
            raise config_error(f"{path}.metric", f"metric {metric!r} is already an objective")
        objectives.append(Objective(metric, smaller))
    first = objectives[0]
    if searcher.get("metric") not in (None, first.metric):
        raise config_error(
            "metric",
            f"metric {searcher['metric']!r} differs from the first objective's "
            f"({first.metric!r}); leave metric out or make them the same",
        )
    if searcher.get("smaller_is_better") not in (None, first.smaller_is_better):
        raise config_error(
            "smaller_is_better",
            "smaller_is_better differs from the first objective's; leave it out or make "
            "them the same",
        )
    return tuple(objectives)


@dataclass(frozen=True)
class OptunaConfig:
    """The optuna searcher's section, checked."""

    options: SearcherOptions  # metric and smaller_is_better: the first objective's
    objectives: tuple[Objective, ...]
    sampler: str
    pruner: PrunerConfig
    max_trials: int
    concurrency: int  # trials unfinished at once

    @classmethod
    def from_dict(cls, searcher: dict[str, Any]) -> OptunaConfig:
        if not isinstance(searcher, dict):
            raise ConfigError(f"searcher: expected a mapping, got {searcher!r}")
        objectives = read_objectives(searcher)
        if objectives:
            first = objectives[0]
            searcher = {
                **searcher,
                "metric": first.metric,
                "smaller_is_better": first.smaller_is_better,
            }
        options = SearcherOptions.from_dict(searcher)
        objectives = objectives or (Objective(options.metric, options.smaller_is_better),)
        sampler = read_choice(searcher, "sampler", SAMPLERS)
        if len(objectives) > 1 and sampler not in MULTI_OBJECTIVE_SAMPLERS:
            raise config_error(
                "sampler",
                f"sampler {sampler} optimizes one objective, and objectives has "
                f"{len(objectives)}; use {', '.join(MULTI_OBJECTIVE_SAMPLERS)}",
            )
        pruner = read_pruner(searcher)
        if pruner.name != "none":
            if len(objectives) > 1:
                raise config_error(
                    "pruner",
                    f"pruner {pruner.name} needs a single objective (Optuna cannot prune a "
                    f"multi-objective study), and objectives has {len(objectives)}; "
                    "use pruner {name: none}",
                )
            if options.length is None:
                raise config_error(
                    "pruner",
                    f"pruner {pruner.name} needs a training length: max_length, or max_time "
                    "with time_metric",
                )
        if pruner.name == "asha":
            check_reachable(options, pruner.divisor, pruner.num_rungs)
        max_trials = options.require_max_trials()
        # Absent: DEFAULT_CONCURRENCY; 0: no limit, as for every searcher.
        wanted = searcher.get("max_concurrent_trials", DEFAULT_CONCURRENCY)
        concurrency = min(wanted or max_trials, max_trials)
        return cls(options, objectives, sampler, pruner, max_trials, concurrency)

    @property
    def multi_objective(self) -> bool:
        return len(self.objectives) > 1

    def halving_steps(self) -> list[int]:
        """The targets of a successive_halving or hyperband trial: every
        min_resource * reduction_factor**k below the length, then the length."""
        length = self.options.require_length()
        steps: list[int] = []
        step = self.pruner.min_resource
        while step < length:
            steps.append(step)
            step *= self.pruner.reduction_factor
        return [*steps, length]


# --- the space ------------------------------------------------------------------------------


def flatten_space(space: dict[str, Any], prefix: str = "") -> dict[str, dict[str, Any]]:
    """The hyperparameters Optuna asks for, by dotted name (consts and objects left out),
    in space order. Raises ConfigError when two names flatten to the same dotted name."""
    flat: dict[str, dict[str, Any]] = {}
    for name, spec in space.items():
        dotted = f"{prefix}{name}"
        if spec["type"] == "const":
            continue
        members = (
            flatten_space(spec["vals"], f"{dotted}.")
            if spec["type"] == "object"
            else {dotted: spec}
        )
        for key, member in members.items():
            if key in flat:
                path = f"hyperparameters.{key}"
                message = f"two hyperparameters have the Optuna name {key!r}; rename one"
                raise ConfigError(
                    f"{path}: {message}", details=[{"path": path, "message": message}]
                )
            flat[key] = member
    return flat


def to_distributions(flat: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Optuna distributions for flatten_space's hyperparameters (needs Optuna)."""
    from optuna.distributions import (
        BaseDistribution,
        CategoricalDistribution,
        FloatDistribution,
        IntDistribution,
    )

    distributions: dict[str, BaseDistribution] = {}
    for name, spec in flat.items():
        kind = spec["type"]
        if kind == "int":
            distributions[name] = IntDistribution(spec["minval"], spec["maxval"])
        elif kind == "double":
            distributions[name] = FloatDistribution(spec["minval"], spec["maxval"])
        elif kind == "log":
            base = float(spec.get("base", 10))
            low, high = sorted((base ** spec["minval"], base ** spec["maxval"]))
            if not (0 < low and math.isfinite(high)):
                path = f"hyperparameters.{name}"
                message = (
                    f"base**minval and base**maxval must be positive floats, got {low}, {high}"
                )
                raise ConfigError(
                    f"{path}: {message}", details=[{"path": path, "message": message}]
                )
            distributions[name] = FloatDistribution(low, high, log=True)
        else:  # categorical: the index of the value, so values may be anything JSON
            distributions[name] = CategoricalDistribution(list(range(len(spec["vals"]))))
    return distributions


def to_hparams(space: dict[str, Any], params: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """The plain nested hparams dict of one Optuna trial's params (by dotted name)."""
    point: dict[str, Any] = {}
    for name, spec in space.items():
        dotted = f"{prefix}{name}"
        kind = spec["type"]
        if kind == "const":
            point[name] = copy.deepcopy(spec["val"])
        elif kind == "object":
            point[name] = to_hparams(spec["vals"], params, f"{dotted}.")
        elif kind == "categorical":
            point[name] = copy.deepcopy(spec["vals"][int(params[dotted])])
        elif kind == "int":
            point[name] = int(params[dotted])
        else:
            point[name] = float(params[dotted])
    return point


# --- Optuna, imported on demand ---------------------------------------------------------------


def _extra_missing(field: str, message: str) -> NotSupportedYet:
    path = f"searcher.{field}"
    return NotSupportedYet(f"{path}: {message}", details=[{"path": path, "message": message}])


def import_optuna(sampler: str) -> None:
    """Import Optuna (and what the sampler needs), quiet its logging; NotSupportedYet naming
    the extra to install when something is missing."""
    try:
        import optuna
    except ImportError:
        raise _extra_missing("name", OPTUNA_EXTRA) from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        if sampler == "gp":
            import scipy  # noqa: F401
            import torch  # noqa: F401
        elif sampler == "cmaes":
            import cmaes  # noqa: F401
    except ImportError:
        raise _extra_missing("sampler", GP_EXTRA if sampler == "gp" else CMAES_EXTRA) from None


@contextmanager
def _quiet() -> Iterator[None]:
    """Optuna marks some samplers and arguments experimental and warns at each use."""
    from optuna.exceptions import ExperimentalWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExperimentalWarning)
        yield


def sampler_seed(seed: int, number: int) -> int:
    """The seed of the sampler that asks trial `number`: from (seed, number) alone."""
    digest = hashlib.sha256(f"shipyard/optuna/{seed}/{number}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def make_sampler(config: OptunaConfig, seed: int) -> optuna.samplers.BaseSampler:
    from optuna import samplers

    with _quiet():
        if config.sampler == "tpe":
            return samplers.TPESampler(seed=seed)
        if config.sampler == "cmaes":
            return samplers.CmaEsSampler(seed=seed, warn_independent_sampling=False)
        if config.sampler == "gp":
            return samplers.GPSampler(seed=seed, warn_independent_sampling=False)
        if config.sampler == "nsga2":
            population = max(2, min(50, config.max_trials // 5))
            return samplers.NSGAIISampler(seed=seed, population_size=population)
        return samplers.RandomSampler(seed=seed)


def make_pruner(config: OptunaConfig) -> optuna.pruners.BasePruner:
    from optuna import pruners

    p = config.pruner
    if p.name == "median":
        return pruners.MedianPruner(
            n_startup_trials=p.n_startup_trials, n_warmup_steps=p.n_warmup_steps
        )
    if p.name == "percentile":
        return pruners.PercentilePruner(
            p.percentile, n_startup_trials=p.n_startup_trials, n_warmup_steps=p.n_warmup_steps
        )
    if p.name == "successive_halving":
        return pruners.SuccessiveHalvingPruner(
            min_resource=p.min_resource, reduction_factor=p.reduction_factor
        )
    if p.name == "hyperband":
        return pruners.HyperbandPruner(
            min_resource=p.min_resource,
            max_resource=config.options.require_length(),
            reduction_factor=p.reduction_factor,
        )
    return pruners.NopPruner()  # none, and asha (decided by asha.AshaBracket)


# --- the study's storage ----------------------------------------------------------------------
# The only functions that reach into Optuna's storage (study._storage, as Optuna's own
# samplers, pruners and Trial do): system attrs have no public setter, and reporting or
# pruning through optuna.Trial would run the sampler's before_trial hook again.


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
    with _quiet():
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


# --- the searcher ---------------------------------------------------------------------------


class OptunaSearcher(Searcher):
    """Optuna's ask/tell; see the module docstring for the rules."""

    def __init__(self, searcher: dict[str, Any], space: dict[str, Any], seed: int) -> None:
        validate_space(space)
        self.config = OptunaConfig.from_dict(searcher)
        self.options = self.config.options
        import_optuna(self.config.sampler)
        self.space = space
        self.seed = seed
        self._distributions = to_distributions(flatten_space(space))
        # The value of each objective, read as is (Optuna gets the directions).
        self._readers = [
            dataclasses.replace(self.options, metric=o.metric, smaller_is_better=True)
            for o in self.config.objectives
        ]
        pruner = self.config.pruner.name
        self._bracket: AshaBracket | None = None
        if pruner == "asha":
            self._bracket = AshaBracket(
                self.options,
                self.config.pruner.divisor,
                self.config.pruner.num_rungs,
                self.config.max_trials,
                self.config.concurrency,
            )
        self._halving_steps = (
            self.config.halving_steps() if pruner in ("successive_halving", "hyperband") else []
        )
        self._study = self._new_study()
        self._started = False
        self._shutdown_sent = False
        # request_id -> {"number", "target", "rung", "values" (the last validation's, None
        #   for an unusable one), "stop" (None | "pruned" | "time_metric"), "exit", "note"}
        self._trials: dict[str, dict[str, Any]] = {}
        self._exited = 0  # derived, recomputed by set_state

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
        return [self._ask() for _ in range(self.config.concurrency)]

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
        if len(self._trials) < self.config.max_trials:
            actions.append(Create(self._ask()))
        elif self._exited == len(self._trials) and not self._shutdown_sent:
            self._shutdown_sent = True
            all_errored = all(t["exit"] == ExitReason.ERRORED for t in self._trials.values())
            actions.append(Shutdown(failure=all_errored))
        return actions

    def progress(self) -> float:
        return 1.0 if self._shutdown_sent else self._exited / self.config.max_trials

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
        if self.config.multi_objective:
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
        with _quiet():
            restore_study(self._study, state["study"], self._distributions)

    # --- Optuna calls -----------------------------------------------------------------------

    def _new_study(self) -> optuna.Study:
        import optuna
        from optuna.study import StudyDirection

        directions = [
            StudyDirection.MINIMIZE if o.smaller_is_better else StudyDirection.MAXIMIZE
            for o in self.config.objectives
        ]
        with _quiet():
            return optuna.create_study(
                study_name=f"shipyard-{self.seed}",  # hyperband hashes it: keep it fixed
                directions=directions,
                sampler=make_sampler(self.config, sampler_seed(self.seed, -1)),
                pruner=make_pruner(self.config),
            )

    def _ask(self) -> TrialRequest:
        number = len(self._trials)
        with _quiet():
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
        if not self.config.multi_objective:
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
        with _quiet():
            self._study.tell(trial["number"], told, state=state)

    # --- helpers ----------------------------------------------------------------------------

    @staticmethod
    def _request_id(trial: dict[str, Any]) -> str:
        return request_id_for(trial["number"])

    def _trial(self, request_id: str) -> dict[str, Any]:
        return known_trial(self._trials, request_id, KIND, len(self._trials))


# --- preview --------------------------------------------------------------------------------


def preview_plan(searcher: dict[str, Any], space: dict[str, Any]) -> dict[str, Any]:
    """What an optuna search will run, without Optuna: max_trials trials; with pruner asha
    the expected trials per rung (max_trials / divisor**k) and their compute; otherwise
    every trial to the full length, the most it can cost (Optuna's pruners decide at run
    time, from the values the trials report)."""
    validate_space(space)
    config = OptunaConfig.from_dict(searcher)
    trials, length = config.max_trials, config.options.length
    pruner = config.pruner
    note: str | None = None
    if length is None:
        unit, compute, random_compute = "trials", float(trials), float(trials)
        brackets: list[dict[str, Any]] = []
    elif pruner.name == "asha":
        unit, random_compute = unit_of(config.options), float(trials * length)
        lengths = rung_lengths(length, pruner.divisor, pruner.num_rungs)
        reaching = [max(int(trials / pruner.divisor**k), 1) for k in range(len(lengths))]
        compute = float(
            sum(
                n * (end - start)
                for n, start, end in zip(reaching, [0, *lengths[:-1]], lengths, strict=True)
            )
        )
        rungs = [
            {"rung": k, "trials": n, "length": end}
            for k, (n, end) in enumerate(zip(reaching, lengths, strict=True))
        ]
        brackets = [{"bracket": 0, "trials": trials, "rungs": rungs, "compute": compute}]
    else:
        unit, compute = unit_of(config.options), float(trials * length)
        random_compute = compute
        rungs = [{"rung": 0, "trials": trials, "length": length}]
        brackets = [{"bracket": 0, "trials": trials, "rungs": rungs, "compute": compute}]
        if pruner.name != "none":
            note = (
                f"Optuna's {pruner.name} pruner decides at run time which trials stop early: "
                "the compute shown is the most, every trial trained to the full length"
            )
    return {
        "searcher": KIND,
        "unit": unit,
        "brackets": brackets,
        "total_trials": trials,
        "compute": compute,
        "random_search_compute": random_compute,
        "ratio": compute / random_compute,
        "note": note,
    }
