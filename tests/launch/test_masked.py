"""The masking wrapper run for real: `python -m shipyard.launch.masked CMD` masks the
secrets it is told of in CMD's output, forwards stop signals and exits as CMD did."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

from shipyard.common.masking import MASK
from tests.launch.launcher import env_of, script

WRAPPER = [sys.executable, "-m", "shipyard.launch.masked"]
VALUE = "hunter2-is-not-a-good-secret"

PRINTS = """
import os, sys, time
value = os.environ["API_KEY"]
print("marker before", flush=True)
print(value, flush=True)
print("to stderr", os.environ["API_KEY"], file=sys.stderr, flush=True)
print(value[:6], end="", flush=True)
time.sleep(0.3)
print(value[6:], flush=True)
print(open(os.path.join(os.environ["SHIPYARD_SECRETS_DIR"], "cloud", "key.json")).read())
sys.exit(7)
"""

WAITS_FOR_TERM = """
import signal, sys, time
signal.signal(signal.SIGTERM, lambda *_: (print("child got SIGTERM", flush=True), sys.exit(0)))
print("ready", flush=True)
time.sleep(60)
"""


def test_output_is_masked_and_the_exit_code_is_the_commands(tmp_path):
    secrets_dir = tmp_path / "secrets"
    (secrets_dir / "cloud").mkdir(parents=True)
    (secrets_dir / "cloud" / "key.json").write_text('{"private_key": "file-only-secret-value"}')
    env = env_of(API_KEY=VALUE, SHIPYARD_MASK_ENV="API_KEY", SHIPYARD_SECRETS_DIR=str(secrets_dir))
    done = subprocess.run(
        [*WRAPPER, "--", sys.executable, script(tmp_path, "prints.py", PRINTS)],
        env=env,
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 7
    lines = done.stdout.decode().splitlines()
    assert lines == [
        "marker before",
        MASK.decode(),
        f"to stderr {MASK.decode()}",  # stderr comes through the same pipe, masked
        MASK.decode(),
        MASK.decode(),  # the whole file's content
    ]
    assert VALUE.encode() not in done.stdout + done.stderr


def test_sigterm_is_forwarded_and_a_death_by_signal_is_passed_on(tmp_path):
    proc = subprocess.Popen(
        [*WRAPPER, sys.executable, script(tmp_path, "waits.py", WAITS_FOR_TERM)],
        env=env_of(SHIPYARD_MASK_ENV=""),
        stdout=subprocess.PIPE,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"ready\n"
    proc.send_signal(signal.SIGTERM)  # to the wrapper alone, as a container's init does
    out, _ = proc.communicate(timeout=30)
    assert out == b"child got SIGTERM\n" and proc.returncode == 0
    killed = subprocess.run(
        [*WRAPPER, sys.executable, "-c", "import os, signal; os.kill(os.getpid(), 9)"],
        env=env_of(),
        timeout=60,
    )
    assert killed.returncode == -signal.SIGKILL


def test_a_command_that_cannot_start():
    started = time.monotonic()
    done = subprocess.run(
        [*WRAPPER, "no-such-command-here"], env=env_of(), capture_output=True, timeout=60
    )
    assert done.returncode == 127
    assert b"cannot start 'no-such-command-here'" in done.stderr
    assert time.monotonic() - started < 30
