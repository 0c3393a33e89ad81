"""optuna: Optuna's samplers and pruners behind the Searcher interface, via ask/tell.

One module per concern: space (hyperparameters <-> Optuna distributions), extras (importing
Optuna on demand), factories (samplers and pruners), study (the study's storage and its
JSON snapshot), searcher (the Searcher), preview (the plan, without Optuna). The config is
checked by common/config/searcher/optuna.py.

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

from shipyard.search.optuna.preview import preview_plan
from shipyard.search.optuna.searcher import OptunaSearcher

__all__ = ["OptunaSearcher", "preview_plan"]
