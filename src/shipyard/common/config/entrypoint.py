"""The entrypoint: the command a trial runs, and the script in the context it names."""

from __future__ import annotations

import posixpath
import re
import shlex

from shipyard.common.config._base import invalid, not_supported

# Determined's Trial API form, "model_def:MyTrial": a module and a class, no command.
_TRIAL_CLASS = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
_PYTHON = re.compile(r"^python(\d+(\.\d+)?)?$")
_SHELLS = ("sh", "bash", "zsh")
# Python options that take a value ("-W ignore", "-X dev").
_PY_OPTS_WITH_VALUE = ("-W", "-X", "-Q")


def check_entrypoint(value: str | list[str]) -> str | list[str]:
    if isinstance(value, str):
        if not value.strip():
            raise invalid("the entrypoint is empty; give a command like 'python3 train.py'")
        if _TRIAL_CLASS.match(value.strip()):
            raise not_supported(
                f"the Trial API entrypoint {value!r} is not supported yet: Shipyard runs Core "
                "API scripts; wrap the trial in a script and give its command, like "
                "'python3 train.py'"
            )
        try:
            shlex.split(value)
        except ValueError as exc:
            raise invalid(f"cannot split the entrypoint into arguments: {exc}") from None
        return value
    if not value:
        raise invalid("the entrypoint is empty; give a command like 'python3 train.py'")
    return value


def argv(value: str | list[str]) -> list[str]:
    return shlex.split(value) if isinstance(value, str) else list(value)


def _relative_script(arg: str) -> str | None:
    if posixpath.isabs(arg) or arg == "-":
        return None
    return posixpath.normpath(arg)


def _python_script(args: list[str]) -> str | None:
    """The script a python command line runs, skipping interpreter options."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-m", "-c") or arg.startswith(("-m", "-c")):
            return None  # a module or inline code: no file of the context to check
        if arg in _PY_OPTS_WITH_VALUE:
            i += 2
        elif arg.startswith("-") and arg != "-":
            i += 1
        else:
            return _relative_script(arg)
    return None


def script_of(command: list[str]) -> str | None:
    """`python3 train.py` -> "train.py", `python -m pkg` -> None, `./run.sh` -> "run.sh",
    `bash run.sh` -> "run.sh"; a bare program name found on PATH -> None."""
    if not command:
        return None
    program = posixpath.basename(command[0])
    if _PYTHON.match(program):
        return _python_script(command[1:])
    if program in _SHELLS:
        rest = command[1:]
        if rest and not rest[0].startswith("-"):
            return _relative_script(rest[0])
        return None
    if "/" in command[0] or command[0].endswith((".py", ".sh")):
        return _relative_script(command[0])
    return None
