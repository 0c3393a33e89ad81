"""Request bodies of the experiment routes that change an experiment's record or make a new
one from it: set name, description and labels; fork; continue; delete."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, Field

LABEL_PATTERN = r"^[^\x00-\x1f\s][^\x00-\x1f]*$"  # no control characters, no leading space


Label = Annotated[str, Field(min_length=1, max_length=256, pattern=LABEL_PATTERN)]


class ExperimentChange(BaseModel):
    """Fields left out stay as they are. Labels: add_labels are added (one it has is kept
    once), remove_labels removed (one it lacks is no error)."""

    name: str | None = Field(None, min_length=1, max_length=256, pattern=LABEL_PATTERN)
    description: str | None = Field(None, max_length=10_000)
    add_labels: list[Label] = Field([], max_length=100, description="labels to add")
    remove_labels: list[Label] = Field([], max_length=100, description="labels to remove")


class ForkExperimentRequest(BaseModel):
    """A new experiment with the original's code snapshot and config: `config_yaml` (a
    partial or whole config) merged over it, then each override set."""

    config_yaml: str | None = Field(
        None,
        max_length=1_000_000,
        description="a config (YAML) merged over the original's: mappings key by key, any "
        "other value replaced",
    )
    config_file: str = Field("config.yaml", max_length=256, description="its file name")
    overrides: dict[str, Any] = Field(
        {},
        description='dotted field paths to values, e.g. {"hyperparameters.lr": 0.1}; set '
        "after config_yaml is merged",
    )
    paused: bool = Field(False, description="create it paused")


class ContinueExperimentRequest(BaseModel):
    """More training for an ended single, random or grid search, in place: its trials that
    did not finish (and, with a longer max_length, those that did) resume from their latest
    checkpoints; max_trials adds trials to a random search."""

    max_length: int | None = Field(
        None,
        ge=1,
        le=2**62,
        description="the search's new length (searcher.max_length, or max_time with a "
        "time_metric), in its unit; at least the current one",
    )
    max_trials: int | None = Field(
        None, ge=1, le=100_000, description="a random search's new max_trials (at least its own)"
    )


class ExperimentDeleted(BaseModel):
    id: int
    checkpoints_deleted: int  # their files went with it
