"""Submitting an experiment: validate the config locally, pack and upload the code, create."""

from __future__ import annotations

import getpass
from pathlib import Path
from typing import TYPE_CHECKING

from shipyard.client.contexts import build_context, upload_context
from shipyard.client.experiments import create_experiment
from shipyard.client.session import Session
from shipyard.common.api import CreateExperimentRequest, ExperimentDetail
from shipyard.common.errors import InvalidRequest

if TYPE_CHECKING:
    from shipyard.common.config import ExperimentConfig

# shipyard.common.config (the config's models, ~0.15 s to import) is imported where a
# config is read: most `shipyard` commands never read one, and every command pays for
# what the CLI imports at start.


def read_config_text(config_path: str | Path) -> str:
    from shipyard.common.config.loader import read_config_text as read_utf8_config

    path = Path(config_path)
    if not path.is_file():
        raise InvalidRequest(f"config file {str(path)!r} does not exist or is not a file")
    return read_utf8_config(path)  # ConfigError for a file that is not UTF-8 text


def load_local_config(config_path: str | Path) -> ExperimentConfig:
    """Parse and check a config file on this machine (raises ConfigError with locations)."""
    from shipyard.common.config import load_config_file

    read_config_text(config_path)
    return load_config_file(config_path)


def submit_experiment(
    session: Session, config_path: str | Path, context_dir: str | Path
) -> ExperimentDetail:
    """Everything that can be checked here is checked before anything is sent."""
    from shipyard.common.config import validate_context

    config = load_local_config(config_path)
    archive = build_context(context_dir)
    validate_context(config, archive.files)
    uploaded = upload_context(session, archive.data)
    request = CreateExperimentRequest(
        config_yaml=read_config_text(config_path),
        context_id=uploaded.id,
        config_file=Path(config_path).name,
        owner=login_name(),
    )
    return create_experiment(session, request)


def login_name() -> str | None:
    """Who is submitting: the login name (None when the system cannot say)."""
    try:
        return getpass.getuser() or None
    except (KeyError, OSError):  # no USER/LOGNAME and no passwd entry (some containers)
        return None
