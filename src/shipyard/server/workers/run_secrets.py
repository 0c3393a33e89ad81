"""The secrets of the supervisor's runs: opened at each launch (after checking again that
the experiment's owner may use them), handed to the run as variables and as files in a
private directory (and as its checkpoint storage's keys, for those given as
`{secret: NAME}`), masked in what the master stores of the run's output, and the files
removed when the run ends. A storage's secret_key is masked too, also when the config
holds it literally.

The run's own output is masked before it reaches the log file: its command runs under
`python3 -m shipyard.launch.masked`, which learns the values from the variables named in
SHIPYARD_MASK_ENV and the files under SHIPYARD_SECRETS_DIR. The master masks the lines it
stores again, in case something reached the log another way."""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Container
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy.orm import Session

from shipyard.common.errors import ShipyardError
from shipyard.common.files import write_private_files
from shipyard.common.masking import MASK_ENV, SECRETS_DIR_ENV, Masker
from shipyard.common.node_env import SECRET_FILES_ENV
from shipyard.server import orm
from shipyard.server.db import Database
from shipyard.server.services import checkpoint_storage, secrets
from shipyard.server.services.experiment_config import config_of
from shipyard.server.settings import Settings

log = logging.getLogger(__name__)

ROOT = "run-secrets"  # in the home: one private directory a run, while it runs
WRAPPER = ["python3", "-m", "shipyard.launch.masked", "--"]


@dataclass
class Injection:
    """What a run gets: variables (secret values, its storage keys to mask, and the
    wrapper's two), its command behind the masking wrapper, and the values of the secrets
    it was given (by name: its checkpoint storage spec takes its keys from them)."""

    env: dict[str, str] = field(default_factory=dict)
    values: dict[str, str] = field(default_factory=dict)

    def wrap(self, argv: list[str]) -> list[str]:
        return [*WRAPPER, *argv]


class RunSecrets:
    def __init__(self, settings: Settings, db: Database) -> None:
        self.settings = settings
        self.db = db
        self._maskers: dict[int, Masker] = {}
        secrets.serve(settings, db)  # the master's own uses find its keyring there

    @property
    def root(self) -> Path:
        return self.settings.home / ROOT

    def prepare(
        self, trial: orm.Trial, exp: orm.Experiment, on_masters_disk: bool = True
    ) -> Injection | None:
        """The run's secrets, or None when it has nothing to hide (no secret, no storage
        key). Raises SecretsUnavailable (the run must not start) with what is wrong.
        ``on_masters_disk``: the run's node sees the master's disk, where its secret files
        are written; else they travel by value, for shipyard.launch.entry to write."""
        cfg = config_of(exp)
        values: dict[str, str] = {}
        if secrets.names_used(cfg):
            with self.db.write() as s:  # the keyring is read in a write transaction
                opened = secrets.open_for_run(
                    exp, check_owner=self.settings.auth, settings=self.settings, session=s
                )
                secrets.record_use(opened, trial, session=s)
            values = opened.values
        keys = checkpoint_storage.keys_to_mask(cfg, values)
        if not values and not keys:
            return None
        injection = Injection(env=dict(keys), values=values)
        # The spec holds the keys too: named, a container engine gets it as it gets secrets
        # (never through an env file), and the wrapper masks it whole.
        masked = [*keys, checkpoint_storage.SPEC_ENV] if keys else []
        files = {}
        for use in cfg.secrets:
            if use.env is not None:
                injection.env[use.env] = values[use.name]
                masked.append(use.env)
            elif use.file is not None:
                files[use.file] = values[use.name]
        if files and on_masters_disk:
            injection.env[SECRETS_DIR_ENV] = str(self._write_files(trial, files))
        elif files:  # a credential like the others: masked whole, kept out of Pod specs
            injection.env[SECRET_FILES_ENV] = json.dumps(files)
            masked.append(SECRET_FILES_ENV)
        injection.env[MASK_ENV] = ",".join(masked)
        self._maskers[trial.id] = _masker(values, keys)
        return injection

    def _write_files(self, trial: orm.Trial, files: dict[str, str]) -> Path:
        """Each file mode 0600 in a directory (0700) of this run alone."""
        self.root.mkdir(mode=0o700, exist_ok=True)
        os.chmod(self.root, 0o700)
        directory = self.root / f"trial-{trial.id}-run-{trial.run_id}"
        shutil.rmtree(directory, ignore_errors=True)  # left by a launch that failed
        write_private_files(directory, files)
        return directory

    def reattach(self, trial: orm.Trial, *, session: Session) -> None:
        """After a master restart: the masker of a run that is still running (in the
        restart's write transaction). The run has its values already; a value that no
        longer opens is masked by the run's own wrapper only."""
        exp = session.get_one(orm.Experiment, trial.experiment_id)
        cfg = config_of(exp)
        values: dict[str, str] = {}
        if secrets.names_used(cfg):
            try:
                opened = secrets.open_for_run(
                    exp, check_owner=False, settings=self.settings, session=session
                )
            except ShipyardError as exc:
                log.warning("trial %s: its secrets are not masked by the master: %s", trial.id, exc)
                return
            values = opened.values
        masker = _masker(values, checkpoint_storage.keys_to_mask(cfg, values))
        if masker:
            self._maskers[trial.id] = masker

    def mask(self, trial_id: int, chunk: bytes) -> bytes:
        masker = self._maskers.get(trial_id)
        return masker.mask(chunk) if masker else chunk

    def mask_lines(self, trial_id: int, lines: list[str]) -> list[str]:
        """``mask`` for lines a run sent over HTTP (its entry masked them too)."""
        masker = self._maskers.get(trial_id)
        if masker is None:
            return lines
        return [masker.mask(line.encode()).decode("utf-8", errors="replace") for line in lines]

    def finish(self, trial_id: int) -> None:
        """The run ended: forget its values and remove its files."""
        self._maskers.pop(trial_id, None)
        for directory in self.root.glob(f"trial-{trial_id}-run-*"):
            shutil.rmtree(directory, ignore_errors=True)

    def sweep(self, running: Container[int]) -> None:
        """After a master restart: remove the files of runs that are not running."""
        if not self.root.is_dir():
            return
        for directory in self.root.iterdir():
            trial_id = directory.name.split("-")[1] if directory.name.startswith("trial-") else ""
            if not (trial_id.isdigit() and int(trial_id) in running):
                shutil.rmtree(directory, ignore_errors=True)


def _masker(values: dict[str, str], keys: dict[str, str]) -> Masker:
    """What the master masks in the lines it stores of a run: its secrets' values and its
    storage keys (checkpoint_storage.keys_to_mask)."""
    return Masker([*values.values(), *keys.values()])
