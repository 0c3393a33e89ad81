"""Where a trial's TensorBoard files are kept in its experiment's checkpoint storage: one
rule for the trial side (which copies them there) and the master (which deletes them with
the experiment).

Standard library only: shipyard.core imports this module.
"""

from __future__ import annotations

STORAGE_DIR = "tensorboard"


def experiment_prefix(experiment_id: int) -> str:
    """Every trial of the experiment is a directory (a TensorBoard run) under this key:
    ``tensorboard --logdir <base>/tensorboard/experiment-<id>`` on a shared file system."""
    return f"{STORAGE_DIR}/experiment-{int(experiment_id)}"


def trial_prefix(experiment_id: int, trial_id: int, rank: int = 0) -> str:
    """One trial's files; rank n > 0 copies its own directory to ``.../rank-<n>``."""
    prefix = f"{experiment_prefix(experiment_id)}/trial-{int(trial_id)}"
    return prefix if rank == 0 else f"{prefix}/rank-{int(rank)}"
