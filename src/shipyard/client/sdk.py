"""The SDK's facade, `Shipyard`: one session to one master, each call a module's function
(see the package's docstring)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from shipyard.client import artifacts as client_artifacts
from shipyard.client import checkpoints, experiments, master, models, run_records, trials, users
from shipyard.client.handles import Experiment, Trial, TrialRef
from shipyard.client.logs import iter_log_lines
from shipyard.client.model_uri import parse_model_ref
from shipyard.client.session import Session
from shipyard.client.submit import submit_experiment
from shipyard.common.api import (
    ActionResult,
    CheckpointInfo,
    Curve,
    ExperimentDetail,
    ExperimentOverview,
    ExperimentSummary,
    LogLine,
    MasterInfo,
    MetricSeries,
    SlotInfo,
    TrialListItem,
)
from shipyard.common.api_artifacts import ArtifactInfo
from shipyard.common.api_experiments import ExperimentDeleted
from shipyard.common.api_models import (
    ModelAliasInfo,
    ModelDetail,
    ModelSummary,
    ModelVersionDetail,
    ModelVersionInfo,
)
from shipyard.common.api_runs import TrialDiff, TrialEnvironment
from shipyard.common.api_users import WhoAmI

__all__ = ["Experiment", "Shipyard", "Trial", "TrialRef"]


class Shipyard:
    """A friendly handle on one master."""

    def __init__(
        self, master: str | None = None, *, timeout_s: float = 30.0, token: str | None = None
    ) -> None:
        """token: an API token (`shipyard token create`); by default SHIPYARD_TOKEN, else
        the one `shipyard user login` kept for this master in $SHIPYARD_HOME/auth.json."""
        self.session = Session(master, timeout_s=timeout_s, token=token)

    @property
    def url(self) -> str:
        return self.session.url

    def close(self) -> None:
        self.session.close()

    def __enter__(self) -> Shipyard:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def whoami(self) -> WhoAmI:
        """The user this handle's token belongs to (username, admin, service)."""
        return users.whoami(self.session)

    def master_info(self) -> MasterInfo:
        return master.get_master(self.session)

    def slots(self) -> list[SlotInfo]:
        return master.list_slots(self.session)

    def create_experiment(
        self,
        config_path: str | Path,
        context_dir: str | Path,
        *,
        overrides: Mapping[str, Any] | None = None,
        paused: bool = False,
    ) -> Experiment:
        """overrides: dotted paths to values, e.g. {"hyperparameters.lr": 0.1}, set in the
        config first; paused: no trial starts until activate()."""
        made = submit_experiment(
            self.session, config_path, context_dir, overrides=overrides, paused=paused
        )
        return Experiment.fetch(self.session, made.id)

    def get_experiment(self, experiment_id: int) -> Experiment:
        """The experiment (an ExperimentDetail) with top_checkpoint(), list_trials(),
        wait() and to_dataframe()."""
        return Experiment.fetch(self.session, experiment_id)

    def fork_experiment(
        self,
        experiment_id: int,
        *,
        overrides: Mapping[str, Any] | None = None,
        config_yaml: str | None = None,
        paused: bool = False,
    ) -> Experiment:
        """A new experiment from this one's config and code: config_yaml (whole or partial)
        merged over its config, then overrides set. The original is not changed."""
        made = experiments.fork_experiment(
            self.session,
            experiment_id,
            overrides=overrides,
            config_yaml=config_yaml,
            paused=paused,
        )
        return Experiment.fetch(self.session, made.id)

    def continue_experiment(
        self, experiment_id: int, *, max_length: int | None = None, max_trials: int | None = None
    ) -> ActionResult:
        """Train an ended single, random or grid search further, in place (its trials
        resume from their latest checkpoints; its records are kept)."""
        return experiments.continue_experiment(
            self.session, experiment_id, max_length=max_length, max_trials=max_trials
        )

    def set_experiment(
        self,
        experiment_id: int,
        *,
        name: str | None = None,
        description: str | None = None,
        add_labels: Sequence[str] = (),
        remove_labels: Sequence[str] = (),
    ) -> ExperimentSummary:
        """Rename, describe, label (None and empty leave a field as it is)."""
        return experiments.change_experiment(
            self.session,
            experiment_id,
            name=name,
            description=description,
            add_labels=add_labels,
            remove_labels=remove_labels,
        )

    def delete_experiment(self, experiment_id: int) -> ExperimentDeleted:
        """Delete an ended experiment with its trials, metrics, logs and checkpoints."""
        return experiments.delete_experiment(self.session, experiment_id)

    def experiment_summary(self, experiment_id: int) -> ExperimentOverview:
        """The experiment and its config, without its trials."""
        return experiments.get_experiment_summary(self.session, experiment_id)

    def list_experiments(
        self,
        *,
        limit: int | None = None,
        state: str | None = None,
        archived: experiments.Archived = "false",
        offset: int = 0,
        labels: Sequence[str] = (),
        user: str | None = None,
        name: str | None = None,
    ) -> list[ExperimentSummary]:
        """Newest first; archived: "false" hides archived ones, "true" only them, "all";
        labels: those with every one; user: the owner; name: a part of the name. The
        master answers `limit` at most (100 by default): experiments_page() also says how
        many there are in all."""
        return self.experiments_page(
            limit=limit,
            state=state,
            archived=archived,
            offset=offset,
            labels=labels,
            user=user,
            name=name,
        ).items

    def experiments_page(
        self,
        *,
        limit: int | None = None,
        offset: int = 0,
        state: str | None = None,
        archived: experiments.Archived = "false",
        labels: Sequence[str] = (),
        user: str | None = None,
        name: str | None = None,
    ) -> experiments.ExperimentPage:
        """One page of list_experiments, with `total` (all the filters select) and
        `more` (past this page)."""
        return experiments.list_experiments_page(
            self.session,
            limit=limit,
            offset=offset,
            state=state,
            archived=archived,
            labels=labels,
            user=user,
            name=name,
        )

    def wait(self, experiment_id: int, timeout: float | None = None) -> ExperimentDetail:
        """Block until the experiment ends; raises ShipyardError after `timeout` seconds."""
        return experiments.wait_for_experiment(self.session, experiment_id, timeout_s=timeout)

    def pause(self, experiment_id: int) -> ActionResult:
        return experiments.pause_experiment(self.session, experiment_id)

    def activate(self, experiment_id: int) -> ActionResult:
        return experiments.activate_experiment(self.session, experiment_id)

    def kill(self, experiment_id: int) -> ActionResult:
        return experiments.kill_experiment(self.session, experiment_id)

    def archive(self, experiment_id: int) -> ActionResult:
        """Hide an ended experiment from lists (Conflict while it runs)."""
        return experiments.archive_experiment(self.session, experiment_id)

    def unarchive(self, experiment_id: int) -> ActionResult:
        return experiments.unarchive_experiment(self.session, experiment_id)

    def curves(
        self,
        experiment_id: int,
        name: str,
        *,
        group: str = "validation",
        max_points: int | None = None,
    ) -> list[Curve]:
        """One metric of every trial of the experiment, each downsampled to max_points (by
        default what the web UI's chart of all the trials draws)."""
        return experiments.get_experiment_curves(
            self.session, experiment_id, name, group=group, max_points=max_points
        )

    def trial(self, trial_id: int) -> Trial:
        """The trial (a TrialDetail) with top_checkpoint() and checkpoints()."""
        return Trial.fetch(self.session, trial_id)

    get_trial = trial  # Determined's name

    def list_trials(
        self,
        *,
        states: list[str] | tuple[str, ...] = (),
        restarted: bool | None = None,
        limit: int | None = None,
    ) -> list[TrialListItem]:
        """Trials of every experiment, e.g. recent failures: list_trials(states=["ERRORED"])."""
        return trials.list_trials(self.session, states=states, restarted=restarted, limit=limit)

    def trial_logs(self, trial_id: int, *, rank: int | None = None) -> list[LogLine]:
        """Every log line the trial has written so far (`rank`: only that rank's)."""

        def read(after: int, wait_s: float):
            return trials.get_trial_logs(
                self.session, trial_id, after=after, wait_s=wait_s, rank=rank
            )

        return list(iter_log_lines(read))

    def trial_metrics(
        self,
        trial_id: int,
        *,
        group: str | None = None,
        name: str | None = None,
        max_points: int | None = None,
    ) -> list[MetricSeries]:
        return trials.get_trial_metrics(
            self.session, trial_id, group=group, name=name, max_points=max_points
        )

    def trial_environment(self, trial_id: int, *, run_id: int | None = None) -> TrialEnvironment:
        """What a run of the trial ran (default: the latest run that captured it): the code
        (git at submit), hyperparameters, seed, image and each rank's environment."""
        return run_records.get_trial_environment(self.session, trial_id, run_id=run_id)

    def diff_trials(self, a: int, b: int, *, rank: int = 0) -> TrialDiff:
        """Every difference between what trials a and b ran (`.identical` when none)."""
        return run_records.diff_trials(self.session, a, b, rank=rank)

    def rerun_trial(self, trial_id: int) -> Experiment:
        """A one-trial experiment running the trial again (same code, config, hyperparameters
        and seed)."""
        made = run_records.rerun_trial(self.session, trial_id)
        return Experiment.fetch(self.session, made.id)

    def trial_artifacts(self, trial_id: int) -> list[ArtifactInfo]:
        """The files the trial logged with ctx.artifacts (images, texts, tables, files)."""
        return client_artifacts.list_artifacts(self.session, trial_id)

    def download_artifact(
        self, trial_id: int, artifact_id: int, dest: str | Path | None = None
    ) -> Path:
        """An artifact's content into dest (a file, or a directory: its name in it;
        default: its name here), checked against its sha256; returns the file."""
        return client_artifacts.download_artifact(self.session, trial_id, artifact_id, dest)

    def checkpoints(self, experiment_id: int) -> list[CheckpointInfo]:
        return checkpoints.list_checkpoints(self.session, experiment_id)

    def trial_checkpoints(self, trial_id: int) -> list[CheckpointInfo]:
        return checkpoints.list_trial_checkpoints(self.session, trial_id)

    def download_checkpoint(self, uuid: str, dest: str | Path) -> Path:
        """Unpack the checkpoint's files into dest (created if needed); returns dest."""
        checkpoints.download_checkpoint(self.session, uuid, dest)
        return Path(dest)

    # -- the model registry ------------------------------------------------------------------

    def create_model(
        self,
        name: str,
        *,
        workspace: str | None = None,
        description: str = "",
        tags: Sequence[str] = (),
    ) -> ModelDetail:
        """A model with no version yet, in `workspace` (default "Uncategorized")."""
        return models.create_model(
            self.session, name, workspace=workspace, description=description, tags=tags
        )

    def get_model(self, name: str, *, workspace: str | None = None) -> ModelDetail:
        """The model with its versions and aliases (`workspace`: only when its name is in
        several workspaces you see)."""
        return models.get_model(self.session, name, workspace=workspace)

    def list_models(
        self, *, workspace: str | None = None, archived: bool | None = False
    ) -> list[ModelSummary]:
        """archived: False hides archived models, True shows only them, None all."""
        return models.list_models(self.session, workspace=workspace, archived=archived)

    def register_model_version(
        self,
        name: str,
        checkpoint_uuid: str,
        *,
        workspace: str | None = None,
        description: str = "",
        tags: Sequence[str] = (),
    ) -> ModelVersionInfo:
        """Version N+1 of the model: a COMPLETED checkpoint of its workspace, never changed
        after and never deleted by retention while the version exists."""
        return models.register_version(
            self.session,
            name,
            checkpoint_uuid,
            workspace=workspace,
            description=description,
            tags=tags,
        )

    def set_model_alias(
        self, name: str, alias: str, version: int, *, workspace: str | None = None
    ) -> ModelAliasInfo:
        """Point the alias (e.g. "production") at a version: made, or moved."""
        return models.set_alias(self.session, name, alias, version, workspace=workspace)

    def get_model_version(self, uri: str) -> ModelVersionDetail:
        """The version a model URI (or NAME@ALIAS, NAME/VERSION, NAME) names, with its
        lineage: checkpoint, trial, experiment, code, environment, validation metrics."""
        return models.resolve(self.session, parse_model_ref(uri))

    def resolve_model(self, uri: str, dest: str | Path | None = None) -> Path:
        """The local directory holding the checkpoint of the version `uri` names:
        shipyard://models/NAME@ALIAS or shipyard://models/NAME/VERSION (?workspace=W when
        the name is in several workspaces). Downloaded into dest, or by default into
        ~/.cache/shipyard/models/<workspace>/<name>/<version>/, reused once complete."""
        version = models.resolve(self.session, parse_model_ref(uri))
        if dest is None:
            return models.cached_download(self.session, version)
        checkpoints.download_checkpoint(self.session, version.checkpoint_uuid, dest)
        return Path(dest)
