"""ctx.train: what is accepted, what is refused, and that reporting never does I/O itself."""

from __future__ import annotations

import io
import sys
import threading
from fractions import Fraction

import pytest

import shipyard.core
from shipyard.common.errors import Conflict


class ThreadRecordingStdout(io.StringIO):
    """A stdout that remembers which thread wrote each chunk."""

    def __init__(self) -> None:
        super().__init__()
        self.writer_threads: set[str] = set()

    def write(self, text: str) -> int:
        self.writer_threads.add(threading.current_thread().name)
        return super().write(text)


def test_reports_are_printed_by_the_sender_thread_not_the_caller(monkeypatch):
    stdout = ThreadRecordingStdout()
    monkeypatch.setattr(sys, "stdout", stdout)

    with shipyard.core.init() as ctx:
        for step in range(10_000):
            ctx.train.report_training_metrics(step, {"loss": 1.0 / (step + 1)})

    lines = stdout.getvalue().splitlines()
    assert len(lines) == 10_000
    assert lines[0] == "[shipyard] training steps=0 loss=1"
    assert lines[-1] == "[shipyard] training steps=9999 loss=0.0001"
    assert stdout.writer_threads == {"shipyard-metric-printer"}


def test_flush_waits_for_delivery(monkeypatch):
    stdout = ThreadRecordingStdout()
    monkeypatch.setattr(sys, "stdout", stdout)
    with shipyard.core.init() as ctx:
        ctx.train.report_validation_metrics(5, {"acc": 0.5})
        ctx.train.report_progress(0.25)
        ctx.train.flush()
        assert stdout.getvalue().splitlines() == [
            "[shipyard] validation steps=5 acc=0.5",
            "[shipyard] progress 25.0%",
        ]


def test_accepted_values(capsys):
    numbers = {"b": True, "i": 3, "f": 0.5, "nan": float("nan"), "inf": float("inf")}
    with shipyard.core.init() as ctx:
        ctx.train.report_training_metrics(0, numbers)
        ctx.train.report_training_metrics(1, {"frac": Fraction(1, 4)})
        ctx.train.report_validation_metrics(2, {})
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "[shipyard] training steps=0 b=True i=3 f=0.5 nan=nan inf=inf",
        "[shipyard] training steps=1 frac=0.25",
        "[shipyard] validation steps=2",
    ]


def test_the_callers_dict_may_change_after_reporting(capsys):
    metrics = {"loss": 1.0}
    with shipyard.core.init() as ctx:
        ctx.train.report_training_metrics(1, metrics)
        metrics["loss"] = 2.0
    assert "[shipyard] training steps=1 loss=1" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("steps", "metrics", "error", "message"),
    [
        (1, {"loss": "low"}, TypeError, "metric 'loss' must be a number"),
        (1, {"loss": None}, TypeError, "metric 'loss' must be a number"),
        (1, {"loss": [0.1]}, TypeError, "metric 'loss' must be a number"),
        (1, {3: 0.1}, TypeError, "names must be non-empty strings"),
        (1, [("loss", 0.1)], TypeError, "must be a dict"),
        (1.5, {"loss": 0.1}, TypeError, "steps_completed must be an int"),
        (True, {"loss": 0.1}, TypeError, "steps_completed must be an int"),
        (-1, {"loss": 0.1}, ValueError, "steps_completed must be >= 0"),
    ],
)
def test_bad_reports_are_refused_at_once(steps, metrics, error, message, capsys):
    with shipyard.core.init() as ctx:
        with pytest.raises(error, match=message):
            ctx.train.report_training_metrics(steps, metrics)
        with pytest.raises(error, match=message):
            ctx.train.report_validation_metrics(steps, metrics)
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize(
    ("fraction", "error"), [(1.5, ValueError), (-0.1, ValueError), ("x", TypeError)]
)
def test_bad_progress_is_refused(fraction, error):
    with shipyard.core.init() as ctx:
        with pytest.raises(error, match="progress"):
            ctx.train.report_progress(fraction)


def test_reporting_after_the_block_is_refused():
    with shipyard.core.init() as ctx:
        pass
    with pytest.raises(Conflict, match="closed"):
        ctx.train.report_training_metrics(1, {"loss": 1.0})
