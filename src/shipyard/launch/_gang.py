"""The gang: one process per slot running the same command, started, relayed and stopped as
one unit. Shared by the launchers (torch_distributed, tensorflow; mpi runs its ranks through
mpirun and takes the output, stop signals and exit handling from the modules beside this one),
which only decide the environment of each rank.

- Output: each rank's stdout and stderr are relayed as ``[rank=R] line`` (``_output``).
- One unit: a rank that exits non-zero (or is killed) takes the others down (SIGTERM, then
  SIGKILL after the grace) and the launcher exits with that rank's code (128+signal for a
  signal death). SIGTERM/SIGINT to the launcher is forwarded to every rank; the launcher
  then exits 143.
- The ranks stay in the launcher's process group, so the master's killpg reaches them all.

A multi-node trial runs one gang per node; how their launchers meet is ``_nodes``'s.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any

from shipyard.common.log_prefix import rank_prefix
from shipyard.launch._exits import (
    EXIT_CANNOT_START,
    EXIT_TERMINATED,
    describe_exit,
    exit_status,
    tell_master,
)
from shipyard.launch._output import Output, join_all, relay

POLL_S = 0.05
_FORWARDED = (signal.SIGTERM, signal.SIGINT)


class StopSignals:
    """While a gang runs: SIGTERM/SIGINT to the launcher are noted (the first one), for its
    supervising loop to stop the ranks; the previous handlers come back afterwards."""

    def __init__(self) -> None:
        self.received: int | None = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopSignals:
        self._previous = {sig: signal.signal(sig, self._note) for sig in _FORWARDED}
        return self

    def __exit__(self, *_exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    def _note(self, signum: int, _frame: object) -> None:
        if self.received is None:
            self.received = signum

    @property
    def name(self) -> str:
        assert self.received is not None
        return signal.Signals(self.received).name


class Gang:
    """The ranks of one command. ``run()`` starts them all and returns the exit status."""

    def __init__(
        self,
        command: list[str],
        envs: list[dict[str, str]],
        grace_s: float,
        out: Output,
        *,
        ends_with: int | None = None,
        first_rank: int = 0,
        world_size: int | None = None,
        ranks: list[int] | None = None,
        ends_when: Callable[[], str | None] | None = None,
    ) -> None:
        self.command = command
        # Ranks are numbered globally (a multi-node trial's node k starts at k * local slots);
        # ``ranks`` names each process when they are not consecutive.
        self.ranks = ranks or list(range(first_rank, first_rank + len(envs)))
        self.world_size = world_size
        self.envs = envs
        self.grace_s = grace_s
        self.out = out
        # The process (an index of envs) whose exit 0 ends the gang (the others are stopped,
        # the gang exits 0): tensorflow's --ps chief, whose workers and ps serve until they
        # are stopped. ``ends_when`` does the same when it returns why (the chief's node
        # ended, for the other nodes' workers).
        self.ends_with = ends_with
        self.ends_when = ends_when
        self.procs: list[subprocess.Popen] = []
        self._relays: list[threading.Thread] = []
        self._signals = StopSignals()

    def run(self) -> int:
        with self._signals:
            try:
                started = self._start()
                if started is not None:
                    return started
                return self._supervise()
            finally:
                # A rank's leftover child may hold its pipe open: wait for the output a while.
                join_all(self._relays)

    def _start(self) -> int | None:
        for rank, env in zip(self.ranks, self.envs, strict=True):
            try:
                proc = subprocess.Popen(
                    self.command,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                )  # no new session: the master's killpg of the launcher reaches every rank
            except OSError as exc:
                self.out.say(f"cannot start rank {rank}: {self.command[0]}: {exc.strerror}")
                self._stop_all(f"rank {rank} did not start")
                return EXIT_CANNOT_START
            self.procs.append(proc)
            prefix = rank_prefix(rank).encode()
            for pipe in (proc.stdout, proc.stderr):
                thread = threading.Thread(
                    target=relay, args=(pipe, prefix, self.out), daemon=True, name=f"rank{rank}"
                )
                thread.start()
                self._relays.append(thread)
        return None

    def _supervise(self) -> int:
        while True:
            if self._signals.received is not None:
                self._stop_all(f"the launcher got {self._signals.name}")
                return EXIT_TERMINATED
            codes = [p.poll() for p in self.procs]
            for rank, code in zip(self.ranks, codes, strict=True):
                if code is not None and code != 0:
                    how = describe_exit(code)
                    self.out.say(f"rank {rank} {how}; stopping the gang")
                    self._stop_all(f"rank {rank} failed")
                    tell_master(f"rank {rank} of {self.world_size or len(self.procs)} {how}")
                    return exit_status(code)
            if all(code == 0 for code in codes):
                return 0
            if self.ends_with is not None and codes[self.ends_with] == 0:
                rank = self.ranks[self.ends_with]
                self._stop_all(f"rank {rank} exited with code 0, which ends the gang")
                return 0
            why = self.ends_when() if self.ends_when is not None else None
            if why is not None:
                self._stop_all(f"{why}, which ends the gang")
                return 0
            time.sleep(POLL_S)

    def _stop_all(self, why: str) -> None:
        """SIGTERM to every rank still running, SIGKILL to those left after the grace."""
        procs = zip(self.ranks, self.procs, strict=False)  # the started ones
        running = [(r, p) for r, p in procs if p.poll() is None]
        if not running:
            return
        ranks = ", ".join(str(r) for r, _ in running)
        self.out.say(
            f"{why}: sending SIGTERM to rank(s) {ranks} (SIGKILL after {self.grace_s:g} s)"
        )
        for _, proc in running:
            _send(proc, signal.SIGTERM)
        deadline = time.monotonic() + self.grace_s
        while time.monotonic() < deadline and any(p.poll() is None for _, p in running):
            time.sleep(POLL_S)
        for rank, proc in running:
            if proc.poll() is None:
                self.out.say(f"rank {rank} still running after {self.grace_s:g} s: SIGKILL")
                _send(proc, signal.SIGKILL)
                proc.wait()


def _send(proc: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(sig)
