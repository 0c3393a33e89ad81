"""The copy of several sources' output (a gang's Ray nodes, a run's Pods) into a run's one log
on the master: whole lines of each, all of it at the end, and across a master restart (a new
LogMirror over the same file) no line repeated or lost. The sources here are byte strings
read from an offset, as a node's log file or a Pod's log is."""

from __future__ import annotations

import json

from shipyard.backends.logfile import LogMirror, Source


class Printed:
    """A source's output so far; ``window``: the most bytes one read returns."""

    def __init__(self, text: bytes = b"", window: int | None = None) -> None:
        self.text = text
        self.window = window
        self.answers = True  # False: its node or cluster does not answer
        self.reads = 0

    def __call__(self, offset: int) -> bytes | None:
        self.reads += 1
        if not self.answers:
            return None
        end = None if self.window is None else offset + self.window
        return self.text[offset:end]


def test_whole_lines_of_each_source_then_all_of_it_at_the_end(tmp_path):
    log = str(tmp_path / "trial.log")
    mirror = LogMirror()
    mirror.start(log)
    a, b = Printed(b"a1\na2"), Printed(b"b1\n")
    mirror.copy_lines(log, [a, b], final=False)
    assert open(log, "rb").read() == b"a1\nb1\n"  # a2 waits for its newline
    a.text += b" end\na3"
    b.text += b"b2"
    mirror.copy_lines(log, [a, b], final=True)
    assert open(log, "rb").read() == b"a1\nb1\na2 end\na3\nb2\n"
    assert json.loads(open(f"{log}.offsets").read()) == [len(a.text), len(b.text)]


def test_a_restarted_master_neither_repeats_nor_loses_a_line(tmp_path):
    log = str(tmp_path / "trial.log")
    LogMirror().start(log)
    a, b = Printed(b"a1\n"), Printed(b"b1\nb2")
    LogMirror().copy_lines(log, [a, b], final=False)
    a.text += b"a2\n"
    b.text += b"\n"
    LogMirror().copy_lines(log, [a, b], final=False)  # another master, the same file
    assert open(log, "rb").read() == b"a1\nb1\na2\nb2\n"


def test_the_offsets_an_earlier_master_kept_for_a_kubernetes_run_still_read(tmp_path):
    log = tmp_path / "trial.log"
    log.write_bytes(b"g0 one\ng1 one\n")
    (tmp_path / "trial.log.offsets").write_text(json.dumps({"0": 7, "1": 7}))
    sources = [Printed(b"g0 one\ng0 two\n"), Printed(b"g1 one\n"), Printed(b"g2 one\n")]
    LogMirror().copy_lines(str(log), sources, final=False)
    assert log.read_bytes() == b"g0 one\ng1 one\ng0 two\ng2 one\n"
    assert json.loads((tmp_path / "trial.log.offsets").read_text()) == [14, 7, 7]


def test_a_source_that_does_not_answer_keeps_its_place(tmp_path):
    log = str(tmp_path / "trial.log")
    mirror = LogMirror()
    mirror.start(log)
    a, b = Printed(b"a1\n"), Printed(b"b1\n")
    b.answers = False
    mirror.copy_lines(log, [a, b], final=True)
    b.answers = True
    mirror.copy_lines(log, [a, b], final=True)
    assert open(log, "rb").read() == b"a1\nb1\n"


def test_windows_are_read_to_the_end_when_final_and_a_full_one_without_newline_is_taken(
    tmp_path,
):
    log = str(tmp_path / "trial.log")
    mirror = LogMirror(window=4)
    mirror.start(log)
    bar, lines = Printed(b"\r50%\r60%", window=4), Printed(b"x\nyyy\nzzz\n", window=4)
    mirror.copy_lines(log, [bar, lines], final=False)
    assert open(log, "rb").read() == b"\r50%x\n"  # one read a source while running
    mirror.copy_lines(log, [bar, lines], final=True)
    assert open(log, "rb").read() == b"\r50%x\n\r60%\nyyy\nzzz\n"


def test_a_final_copy_keeps_a_line_a_window_cuts_whole(tmp_path):
    log = str(tmp_path / "trial.log")
    mirror = LogMirror(window=8)
    mirror.start(log)
    a, b = Printed(b"a1\nlong line\nend", window=8), Printed(b"b1\n", window=8)
    mirror.copy_lines(log, [a, b], final=True)
    assert open(log, "rb").read() == b"a1\nlong line\nend\nb1\n"


def test_sources_read_whole_are_read_once(tmp_path):
    log = str(tmp_path / "trial.log")
    source = Printed(b"one\ntwo")
    LogMirror().copy_lines(log, [source], final=True)
    assert (open(log, "rb").read(), source.reads) == (b"one\ntwo\n", 1)


def test_one_source_is_copied_byte_for_byte(tmp_path):
    log = str(tmp_path / "trial.log")
    mirror = LogMirror(window=3)
    mirror.start(log)
    node: Source = Printed(b"one\ntw", window=3)
    mirror.copy_bytes(log, node, final=False)
    assert open(log, "rb").read() == b"one"  # one window while running, no line cut
    mirror.copy_bytes(log, node, final=True)
    assert open(log, "rb").read() == b"one\ntw"


def test_a_new_run_starts_with_an_empty_log_and_no_offsets(tmp_path):
    log = tmp_path / "run" / "trial.log"
    log.parent.mkdir()
    log.write_bytes(b"old\n")
    (tmp_path / "run" / "trial.log.offsets").write_text("[4]")
    LogMirror().start(str(log))
    assert log.read_bytes() == b"" and not (tmp_path / "run" / "trial.log.offsets").exists()
    LogMirror().copy_lines(str(log), [Printed(b"new\n")], final=False)
    assert log.read_bytes() == b"new\n"
