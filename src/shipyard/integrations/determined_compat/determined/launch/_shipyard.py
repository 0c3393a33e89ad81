"""Running one of Shipyard's launchers in place of Determined's: same process, its argv."""

from __future__ import annotations

import sys
from collections.abc import Callable

EXIT_USAGE = 2


def usage_error(prog: str, message: str) -> int:
    """One line on stderr and exit code 2, as Shipyard's launchers do."""
    print(f"{prog}: {message}", file=sys.stderr)
    return EXIT_USAGE


def split_overrides(args: list[str]) -> tuple[list[str], list[str]]:
    """Determined's ``[OVERRIDES... --] SCRIPT...``: (overrides, script)."""
    if "--" in args:
        split = args.index("--")
        return args[:split], args[split + 1 :]
    return [], args


def run(prog: str, main: Callable[[], int], script: list[str]) -> int:
    """Run Shipyard's launcher ``main`` on ``script`` (one rank per slot of the trial)."""
    sys.argv = [prog, "--", *script]
    return main()
