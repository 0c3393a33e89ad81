"""`python3 -m shipyard.launch.masked [--] CMD ARGS...`: run CMD with its output masked.

The master puts this in front of the entrypoint of an experiment that uses secrets, so a
secret value the trial prints never reaches its log file: the values are those of the
variables named in $SHIPYARD_MASK_ENV (comma-separated) and the files under
$SHIPYARD_SECRETS_DIR. CMD's stdout and stderr go through one pipe (their order kept) and
come out, masked (shipyard.common.masking), on this process's stdout. SIGTERM and SIGINT
are forwarded to CMD, which stays in this process group as a launcher's ranks do (the
master's killpg reaches it directly too); the exit status is CMD's, a death by signal N
included."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable

from shipyard.common.masking import Masker, values_from_env

READ_SIZE = 1 << 16
DRAIN_S = 5.0  # after CMD exits, how long a child it left holding the pipe may keep it
EXIT_CANNOT_START = 127
_FORWARDED = (signal.SIGTERM, signal.SIGINT)


class _Relay:
    """Copies the pipe to stdout through the masker; `finish` writes what it held back."""

    def __init__(self, pipe: int, out, masker: Masker) -> None:
        self._pipe = pipe
        self._out = out
        self._masker = masker
        self._lock = threading.Lock()
        self._done = False
        self.thread = threading.Thread(target=self._run, daemon=True, name="masked-relay")

    def _run(self) -> None:
        while True:
            try:
                data = os.read(self._pipe, READ_SIZE)
            except OSError:
                data = b""
            with self._lock:
                if self._done:
                    return
                self._write(self._masker.feed(data) if data else self._masker.flush())
            if not data:
                return

    def finish(self) -> None:
        self.thread.join(timeout=DRAIN_S)
        with self._lock:
            if not self._done:
                self._done = True
                self._write(self._masker.flush())

    def _write(self, data: bytes) -> None:
        if not data:
            return
        try:
            self._out.write(data)
            self._out.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass  # nowhere to write to: CMD must still run and be waited for


def main(argv: list[str] | None = None) -> int:
    command = list(sys.argv[1:] if argv is None else argv)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        print("usage: python3 -m shipyard.launch.masked [--] CMD ARGS...", file=sys.stderr)
        return 2
    try:
        masker = Masker(values_from_env(os.environ))
    except OSError as exc:  # fail closed: never run unmasked
        print(f"shipyard: cannot read the run's secrets: {exc}", file=sys.stderr)
        return EXIT_CANNOT_START
    return exit_as(run_relayed(command, sys.stdout.buffer, masker))


def run_relayed(
    command: list[str],
    out,
    masker: Masker,
    *,
    cwd: str | None = None,
    env: dict[str, str] | None = None,
    say: Callable[[str], None] | None = None,
) -> int:
    """Run CMD with its output going through the masker to ``out`` (anything with write and
    flush), signals forwarded; its exit status (-N for a death by signal N). ``say``: where
    a CMD that cannot start is told of (default: stderr)."""
    read_end, write_end = os.pipe()
    try:
        proc = subprocess.Popen(command, stdout=write_end, stderr=write_end, cwd=cwd, env=env)
    except OSError as exc:
        os.close(read_end)
        message = f"cannot start {command[0]!r}: {exc.strerror}"
        if say is None:
            print(f"shipyard: {message}", file=sys.stderr)
        else:
            say(message)
        return EXIT_CANNOT_START
    finally:
        os.close(write_end)  # CMD holds it now: the pipe ends when CMD (and its children) do
    for sig in _FORWARDED:
        signal.signal(sig, lambda signum, _frame: _send(proc, signum))
    relay = _Relay(read_end, out, masker)
    relay.thread.start()
    code = proc.wait()
    relay.finish()
    return code


def exit_as(code: int) -> int:
    """Leave as CMD did: a death by signal N is the same death here, so the status reads the
    same to whoever waits for this process."""
    if code < 0:
        with contextlib.suppress(OSError, ValueError):  # SIGKILL's cannot be changed
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
        return 128 - code
    return code


def _send(proc: subprocess.Popen, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signum)


if __name__ == "__main__":
    sys.exit(main())
