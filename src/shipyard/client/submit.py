"""Submitting an experiment: validate the config locally, pack and upload the code, create."""

from __future__ import annotations

import getpass
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shipyard.client.code_record import code_record
from shipyard.client.contexts import Progress, build_context, upload_context
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
    session: Session,
    config_path: str | Path,
    context_dir: str | Path,
    *,
    overrides: Mapping[str, Any] | None = None,
    paused: bool = False,
    progress: Progress | None = None,
    warn: Callable[[str], None] | None = None,
) -> ExperimentDetail:
    """Everything that can be checked here is checked before anything is sent.
    overrides: dotted paths to values ({"hyperparameters.lr": 0.1}) set in the config first
    (the config is then sent as YAML without its comments); paused: no trial starts until
    the experiment is activated; progress: told the bytes of the code sent so far; warn:
    told what the user should know of the code's git record (default: warnings.warn)."""
    from shipyard.common.config import load_config, validate_context
    from shipyard.common.config.overrides import overridden_text

    name = Path(config_path).name
    text = overridden_text(read_config_text(config_path), name, overrides or {})
    config = load_config(text, name)
    archive = build_context(context_dir)
    validate_context(config, archive.files)
    uploaded = upload_context(session, archive.data, progress=progress)
    code = code_record(session, context_dir, warn or _warn)
    request = CreateExperimentRequest(
        config_yaml=text,
        context_id=uploaded.id,
        config_file=name,
        owner=login_name(),
        paused=paused,
        code=code,
    )
    return create_experiment(session, request)


def _warn(message: str) -> None:
    warnings.warn(message, UserWarning, stacklevel=3)


def login_name() -> str | None:
    """Who is submitting: the login name (None when the system cannot say)."""
    try:
        return getpass.getuser() or None
    except (KeyError, OSError):  # no USER/LOGNAME and no passwd entry (some containers)
        return None
