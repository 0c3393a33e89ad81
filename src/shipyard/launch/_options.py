"""A launcher's command line and settings: ``[--nproc N] [--] CMD ARGS...``, the trial's
slots (SHIPYARD_SLOT_IDS) and the gang's grace (SHIPYARD_GANG_GRACE_S). A mistake is a
UsageError: one line on stderr, exit code 2 (EXIT_USAGE)."""

from __future__ import annotations

import sys
from dataclasses import dataclass

DEFAULT_GRACE_S = 10.0


class UsageError(Exception):
    """Bad input to a launcher: one line on stderr, exit code 2."""


@dataclass(frozen=True)
class Slot:
    id: str  # "cpu0", "gpu3"

    @property
    def gpu_index(self) -> int | None:
        rest = self.id[3:]
        return int(rest) if self.id.startswith("gpu") and rest.isdigit() else None


@dataclass
class Options:
    nproc: int | None
    command: list[str]


def parse_args(args: list[str], prog: str) -> Options:
    """``[--nproc N] [--] CMD ARGS...``: options end at ``--`` or at the first argument that is
    not one of ours (so ``python3 -u train.py`` needs no ``--``)."""
    nproc: int | None = None
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            i += 1
            break
        if arg in ("-h", "--help"):
            raise UsageError(usage(prog))
        if arg == "--nproc" or arg.startswith("--nproc="):
            if arg == "--nproc":
                if i + 1 >= len(args):
                    raise UsageError("--nproc needs a number of ranks, like --nproc 2")
                value, i = args[i + 1], i + 2
            else:
                value, i = arg.split("=", 1)[1], i + 1
            if not value.isdigit() or int(value) < 1:
                raise UsageError(f"--nproc takes a number of ranks of 1 or more, got {value!r}")
            nproc = int(value)
            continue
        if arg.startswith("-"):
            raise UsageError(f"unknown option {arg!r}; {usage(prog)}")
        break
    command = args[i:]
    if not command:
        raise UsageError(f"no command given; {usage(prog)}")
    return Options(nproc=nproc, command=command)


def usage(prog: str) -> str:
    return (
        f"usage: python3 -m {prog} [--nproc N] [--] CMD ARGS... "
        "(inside Shipyard one rank runs per slot of the trial; --nproc N runs N CPU ranks "
        "locally, without a master)"
    )


def slots_for(options: Options, prog: str, env: dict[str, str]) -> list[Slot]:
    """The trial's slots (SHIPYARD_SLOT_IDS), or --nproc CPU slots when run by hand."""
    ids = [s.strip() for s in env.get("SHIPYARD_SLOT_IDS", "").split(",") if s.strip()]
    if not ids:
        if options.nproc is None:
            raise UsageError(
                "SHIPYARD_SLOT_IDS is not set: this launcher runs inside a Shipyard trial "
                "(entrypoint: python3 -m "
                f"{prog} python3 train.py, with resources.slots_per_trial); to run locally "
                f"without a master, give the number of CPU ranks: python3 -m {prog} --nproc 2 "
                "python3 train.py"
            )
        return [Slot(f"cpu{i}") for i in range(options.nproc)]
    if options.nproc is not None and options.nproc != len(ids):
        raise UsageError(
            f"--nproc {options.nproc} does not match the {len(ids)} slot(s) of this trial "
            f"(SHIPYARD_SLOT_IDS={','.join(ids)}): drop --nproc inside Shipyard and set "
            "resources.slots_per_trial instead"
        )
    return [Slot(i) for i in ids]


def grace_s(env: dict[str, str]) -> float:
    raw = env.get("SHIPYARD_GANG_GRACE_S", "").strip()
    if not raw:
        return DEFAULT_GRACE_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise UsageError(f"SHIPYARD_GANG_GRACE_S must be a number of seconds >= 0, got {raw!r}")
    return value


def read_options(prog: str, env: dict[str, str]) -> tuple[Options, list[Slot], float] | None:
    """A launcher's command line, slots and grace; None after printing a usage error (the
    launcher then exits with EXIT_USAGE)."""
    try:
        options = parse_args(sys.argv[1:], prog)
        return options, slots_for(options, prog, env), grace_s(env)
    except UsageError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return None
