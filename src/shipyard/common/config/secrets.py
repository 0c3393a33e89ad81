"""The `secrets` section (Shipyard's own): which of the workspace's secrets each run gets,
as an environment variable or as a file.

    secrets:
      - WANDB_API_KEY                          # the variable of the same name
      - {name: HF_TOKEN, env: HUGGING_FACE_HUB_TOKEN}
      - {name: GCP_KEY, file: gcp/key.json}    # $SHIPYARD_SECRETS_DIR/gcp/key.json

Whether the secrets exist, and whether the submitter may use them, is the master's check
at submit (and again at each run's start)."""

from __future__ import annotations

import posixpath
import re
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, model_validator

from shipyard.common.api_teams import SECRET_NAME_PATTERN
from shipyard.common.config._base import StrictModel, describe, invalid

_NAME = re.compile(SECRET_NAME_PATTERN)
RESERVED_PREFIX = "SHIPYARD_"  # the master's own variables


def _check_name(value: str, what: str, subpath: str) -> None:
    if not _NAME.match(value):
        raise invalid(
            f"{what} {value!r} is not a valid name: letters, digits and _, not starting "
            "with a digit",
            subpath,
        )


def _check_file(value: str) -> str:
    path = posixpath.normpath(value)
    outside = path == "." or path.split("/")[0] == ".."
    if not value or "\x00" in value or posixpath.isabs(value) or outside:
        raise invalid(
            f"file must be a relative path inside the run's secrets directory, got {value!r}",
            "file",
        )
    return path


class SecretUse(StrictModel):
    """One secret a run gets: into the variable `env`, or the file `file`."""

    name: str
    env: str | None = None
    file: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _form(cls, raw: Any) -> Any:
        if isinstance(raw, str):
            _check_name(raw, "the secret name", "")
            return {"name": raw, "env": raw}
        if not isinstance(raw, dict):
            raise invalid(
                f"expected a secret's name or a map {{name, env}} or {{name, file}}, "
                f"got {describe(raw)}"
            )
        name = raw.get("name")
        if isinstance(name, str):
            _check_name(name, "the secret name", "name")
        env, file = raw.get("env"), raw.get("file")
        if env is not None and file is not None:
            raise invalid("give env or file, not both")
        if env is None and file is None and isinstance(name, str):
            return {**raw, "env": name}  # {name: X} alone: the variable X
        if isinstance(env, str):
            _check_name(env, "env", "env")
            if env.startswith(RESERVED_PREFIX):
                raise invalid(f"variables starting with {RESERVED_PREFIX} are Shipyard's", "env")
        if isinstance(file, str):
            return {**raw, "file": _check_file(file)}
        return raw


def _distinct(uses: list[SecretUse]) -> list[SecretUse]:
    seen: dict[tuple[str, str], int] = {}
    for i, use in enumerate(uses):
        key = ("env", use.env) if use.env is not None else ("file", use.file or "")
        if key in seen:
            raise invalid(
                f"{key[0]} {key[1]!r} is already given by secrets[{seen[key]}]",
                f"[{i}].{key[0]}",
            )
        seen[key] = i
    return uses


def _list_form(raw: Any) -> Any:
    if raw is not None and not isinstance(raw, list):
        raise invalid(f"expected a list of secrets, got {describe(raw)}")
    return raw if raw is not None else []


Secrets = Annotated[list[SecretUse], BeforeValidator(_list_form), AfterValidator(_distinct)]
