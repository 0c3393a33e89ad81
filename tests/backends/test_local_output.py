"""The local backend hands the master what a trial printed, line by line."""

from shipyard.backends import logfile
from shipyard.backends.base import Handle
from shipyard.backends.local import backend as local


def _handle(path) -> Handle:
    return Handle(backend="local", data={"log_path": str(path)})


def test_partial_last_line_waits_for_its_newline_until_the_trial_exits(tmp_path):
    log = tmp_path / "out.log"
    log.write_bytes(b"one\ntwo\nthr")
    b = local.LocalBackend(slots=1)
    chunk, offset = b.read_output(_handle(log), 0)
    assert chunk == b"one\ntwo\n"
    chunk, offset = b.read_output(_handle(log), offset, final=True)
    assert chunk == b"thr"


def test_a_window_without_any_newline_is_not_reread_forever(tmp_path):
    log = tmp_path / "out.log"
    log.write_bytes(b"\r50%" * (logfile.MAX_READ // 4 + 10))  # a progress bar, no newline
    b = local.LocalBackend(slots=1)
    chunk, offset = b.read_output(_handle(log), 0)
    assert len(chunk) == logfile.MAX_READ and offset == logfile.MAX_READ
