"""The entrypoint: the command a trial runs, and the script in the context it names."""

from __future__ import annotations

import posixpath
import re
import shlex

from shipyard.common.config._base import invalid, not_supported

# Determined's Trial API form, "model_def:MyTrial": a module and a class, no command. A
# trial runs it with TRIAL_RUNNER (which starts one rank per slot itself, as Determined's
# harness does); the class is checked there (a TFKerasTrial or DeepSpeedTrial is refused).
TRIAL_CLASS = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
TRIAL_RUNNER = ("python3", "-m", "shipyard.integrations.determined_trial.run")
_PYTHON = re.compile(r"^python(\d+(\.\d+)?)?$")
_SHELLS = ("sh", "bash", "zsh")
# Python options that take a value ("-W ignore", "-X dev").
_PY_OPTS_WITH_VALUE = ("-W", "-X", "-Q")
# Launchers run as `python3 -m shipyard.launch.<name> [OPTIONS] [--] CMD ARGS...`.
LAUNCHER_PACKAGE = "shipyard.launch."
LAUNCHERS = ("torch_distributed", "tensorflow", "mpi")
# Each launcher's options that take a value, skipped to find the command it runs.
_LAUNCHER_OPTIONS = {"torch_distributed": ("--nproc",), "tensorflow": ("--nproc", "--ps")}
# Determined's launchers, which Shipyard's `determined` shim runs (docs/determined.md): each
# maps onto one of Shipyard's, the name returned by launcher_of.
DETERMINED_PACKAGE = "determined.launch."
DETERMINED_LAUNCHERS = {
    "torch_distributed": "torch_distributed",
    "deepspeed": "torch_distributed",
    "tensorflow": "tensorflow",
}
# Runs its command once (Shipyard's launchers prefix each rank's lines already).
_WRAP_RANK = "wrap_rank"


def check_entrypoint(value: str | list[str]) -> str | list[str]:
    if isinstance(value, str):
        if not value.strip():
            raise invalid("the entrypoint is empty; give a command like 'python3 train.py'")
        if TRIAL_CLASS.match(value.strip()):
            return value.strip()  # Determined's PyTorchTrial: see TRIAL_RUNNER
        try:
            args = shlex.split(value)
        except ValueError as exc:
            raise invalid(f"cannot split the entrypoint into arguments: {exc}") from None
        _check_launcher(args)
        return value
    if not value:
        raise invalid("the entrypoint is empty; give a command like 'python3 train.py'")
    _check_launcher(value)
    return value


def _check_launcher(command: list[str]) -> None:
    """`python3 -m shipyard.launch.<name>` must name a launcher that exists and give it a
    command: otherwise every trial would fail at launch with Python's own error."""
    _check_determined_launcher(command)
    found = launcher_of(command)
    if found is None:
        return
    name, rest = found
    known = ", ".join(LAUNCHER_PACKAGE + n for n in LAUNCHERS)
    if name not in LAUNCHERS:
        raise invalid(f"there is no launcher {LAUNCHER_PACKAGE}{name}; the launchers are: {known}")
    if _launcher_command(name, rest) is None:
        raise invalid(
            f"the launcher {LAUNCHER_PACKAGE}{name} needs the command to run on each slot, "
            f"like 'python3 -m {LAUNCHER_PACKAGE}{name} python3 train.py'"
        )


def _check_determined_launcher(command: list[str]) -> None:
    found = _module_of(command)
    if found is None or not found[0].startswith(DETERMINED_PACKAGE):
        return
    name, rest = found[0][len(DETERMINED_PACKAGE) :], found[1]
    known = ", ".join(DETERMINED_PACKAGE + n for n in (*DETERMINED_LAUNCHERS, _WRAP_RANK))
    if name == "horovod":
        raise not_supported(
            "determined.launch.horovod is not supported yet: use python3 -m "
            "shipyard.launch.mpi horovodrun ... (docs/distributed.md)"
        )
    if name not in DETERMINED_LAUNCHERS and name != _WRAP_RANK:
        raise invalid(
            f"there is no launcher {DETERMINED_PACKAGE}{name} in Shipyard; the ones it runs "
            f"are: {known}"
        )
    run = _determined_command(name, rest)
    if run is None:
        raise invalid(
            f"the launcher {DETERMINED_PACKAGE}{name} needs the command to run, like "
            f"'python3 -m {DETERMINED_PACKAGE}{name} python3 train.py'"
        )
    if run[0] == "--trial":
        instead = (
            "a DeepSpeedTrial is not supported either: run a script that uses DeepSpeed "
            "itself (with det.core for metrics and checkpoints)"
            if name == "deepspeed"
            else "give the class as the entrypoint ('model_def:MyTrial') or run a script"
        )
        raise not_supported(
            f"{DETERMINED_PACKAGE}{name} --trial (a legacy Trial class) is not supported "
            f"yet: {instead}"
        )


def _determined_command(name: str, args: list[str]) -> list[str] | None:
    """The command a Determined launcher runs: torch_distributed and deepspeed take
    `[OVERRIDES... --] CMD`, tensorflow `[--port N] [--] CMD`, wrap_rank `RANK CMD`."""
    if name == _WRAP_RANK:
        rest = [a for a in args if a != "--no-redirect-stdio"]
        after_rank = rest[2:] if rest[1:2] == ["--"] else rest[1:]
        return after_rank or None
    if name == "tensorflow":
        i = 2 if args[:1] == ["--port"] else 1 if args[:1] and args[0].startswith("--port=") else 0
        rest = args[i:]
        return (rest[1:] if rest[:1] == ["--"] else rest) or None
    return (args[args.index("--") + 1 :] if "--" in args else args) or None


def _module_of(command: list[str]) -> tuple[str, list[str]] | None:
    """For `python3 [opts] -m MODULE ARGS...`: (MODULE, ARGS); else None."""
    if not command or not _PYTHON.match(posixpath.basename(command[0])):
        return None
    args = command[1:]
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "-m" or (arg.startswith("-m") and len(arg) > 2):
            module = args[i + 1] if arg == "-m" and i + 1 < len(args) else arg[2:]
            return module, args[i + (2 if arg == "-m" else 1) :]
        if arg in _PY_OPTS_WITH_VALUE:
            i += 2
        elif arg.startswith("-") and arg != "-":
            i += 1
        else:
            return None
    return None


def launcher_of(command: list[str]) -> tuple[str, list[str]] | None:
    """For `python3 [opts] -m shipyard.launch.<name> ARGS...`: (name, ARGS); for one of
    Determined's launchers, the name of Shipyard's it runs and ARGS as that one takes them
    (`-- CMD`); else None."""
    found = _module_of(command)
    if found is None:
        return None
    module, args = found
    if module.startswith(DETERMINED_PACKAGE):
        name = DETERMINED_LAUNCHERS.get(module[len(DETERMINED_PACKAGE) :])
        run = _determined_command(module[len(DETERMINED_PACKAGE) :], args)
        return None if name is None or run is None else (name, ["--", *run])
    if not module.startswith(LAUNCHER_PACKAGE):
        return None
    return module[len(LAUNCHER_PACKAGE) :], args


def _launcher_command(name: str, args: list[str]) -> list[str] | None:
    """The command a launcher runs: what follows its options (`--nproc N`, `--ps K`, `--`)."""
    options = _LAUNCHER_OPTIONS.get(name, ("--nproc",))
    i = 0
    while i < len(args):
        if args[i] == "--":
            i += 1
            break
        if args[i] in options:
            i += 2
        elif args[i].split("=", 1)[0] in options:
            i += 1
        else:
            break
    return args[i:] or None


def argv(value: str | list[str]) -> list[str]:
    if isinstance(value, str) and TRIAL_CLASS.match(value.strip()):
        return [*TRIAL_RUNNER, value.strip()]
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
    `bash run.sh` -> "run.sh"; a bare program name found on PATH -> None;
    `python3 -m shipyard.launch.torch_distributed python3 train.py` -> "train.py";
    `python3 -m shipyard.launch.tensorflow --ps 1 python3 train.py` -> "train.py"."""
    if not command:
        return None
    launcher = launcher_of(command)
    if launcher is not None:  # the script is the one the launcher runs on every slot
        return script_of(_launcher_command(*launcher) or [])
    module = _module_of(command)
    if module is not None and module[0] == DETERMINED_PACKAGE + _WRAP_RANK:
        return script_of(_determined_command(_WRAP_RANK, module[1]) or [])
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
