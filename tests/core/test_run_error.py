"""The error a failing run sends the master: what is sent, and that sending never hides it.

That the master stores it and shows it in the exit reason is in tests/e2e/test_run_error.py.
"""

from __future__ import annotations

import socket
import time

import pytest

from shipyard.core._run_error import MAX_CHARS, failure_message
from tests.core.conftest import run_script


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (ValueError("bad lr 0.5"), "ValueError: bad lr 0.5"),
        (RuntimeError(), "RuntimeError"),
        (OSError(28, "No space left on device"), "OSError: [Errno 28] No space left on device"),
        (ValueError("line one\n  line two"), "ValueError: line one line two"),
        (SystemExit("config not found"), "SystemExit: config not found"),
        (SystemExit(), None),
        (SystemExit(0), None),
        (SystemExit(3), None),  # the exit code says it already
        (KeyboardInterrupt(), None),
    ],
)
def test_failure_message(exc, expected):
    assert failure_message(exc) == expected


def test_a_long_message_is_cut():
    message = failure_message(ValueError("x" * 5000))
    assert message is not None
    assert len(message) == MAX_CHARS
    assert message.startswith("ValueError: xxx") and message.endswith("…")


def test_an_unreachable_master_does_not_hide_the_error(tmp_path):
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {"SHIPYARD_MASTER": f"http://127.0.0.1:{port}", "SHIPYARD_TRIAL_ID": "1"}
    source = (
        "import shipyard.core\n"
        "with shipyard.core.init() as ctx:\n"
        "    raise ValueError('the real error')\n"
    )

    started = time.monotonic()
    result = run_script(tmp_path, source, env=env)

    assert result.returncode == 1
    assert time.monotonic() - started < 10  # one short try, no retry window
    assert "could not tell the master why this run failed" in result.stderr
    assert result.stderr.rstrip().endswith("ValueError: the real error")  # the traceback's end
