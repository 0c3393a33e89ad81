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


# --- report_metrics(group, ...): any group, checked on the calling thread ---------------


class RecordingHttp:
    """What MasterTrain sends, recorded: the master's side of the wire, without a master."""

    def __init__(self) -> None:
        self.posts: list[tuple[str, dict]] = []
        self.threads: set[str] = set()

    def request(self, method: str, path: str, body: dict) -> dict:
        self.threads.add(threading.current_thread().name)
        self.posts.append((path, body))
        return {}


def master_train(http: RecordingHttp):
    from shipyard.core.train import MasterTrain

    return MasterTrain(http, trial_id=7, run_id=1)  # type: ignore[arg-type]


def sent_reports(http: RecordingHttp) -> list[dict]:
    """The reports MasterTrain posted, read back from the columns it sends them as."""
    reports = []
    for path, body in http.posts:
        if not path.endswith("/metrics"):
            continue
        for block in body["columns"]:
            for i, step in enumerate(block["steps"]):
                metrics = {name: values[i] for name, values in block["metrics"].items()}
                reports.append(
                    {"group": block["group"], "steps_completed": step, "metrics": metrics}
                )
    return reports


def test_report_metrics_queues_a_report_of_any_group(capsys):
    with shipyard.core.init() as ctx:
        ctx.train.report_metrics("test", 3, {"acc": 0.75})
        ctx.train.report_metrics("eval.extra", 4, {"f1": 0.5})
    assert capsys.readouterr().out.splitlines() == [
        "[shipyard] test steps=3 acc=0.75",
        "[shipyard] eval.extra steps=4 f1=0.5",
    ]

    http = RecordingHttp()
    train = master_train(http)
    train.report_metrics("Test_1-a.b", 2, {"x": 1})
    train.close(5)
    assert sent_reports(http) == [
        {"group": "Test_1-a.b", "steps_completed": 2, "metrics": {"x": 1}}
    ]


def test_validation_and_training_through_report_metrics_are_the_named_calls():
    """The master hands "validation" reports to the searcher: report_metrics("validation")
    must put exactly what report_validation_metrics puts on the wire."""
    http = RecordingHttp()
    train = master_train(http)
    train.report_validation_metrics(5, {"val_loss": 0.25})
    train.report_metrics("validation", 5, {"val_loss": 0.25})
    train.report_training_metrics(5, {"loss": 0.5})
    train.report_metrics("training", 5, {"loss": 0.5})
    train.close(5)
    first, second, third, fourth = sent_reports(http)
    assert (
        first
        == second
        == {"group": "validation", "steps_completed": 5, "metrics": {"val_loss": 0.25}}
    )
    assert third == fourth == {"group": "training", "steps_completed": 5, "metrics": {"loss": 0.5}}


@pytest.mark.parametrize("group", ["", "has space", "x" * 40, "1st", "_x", "a/b", "tést", "ok\n"])
def test_a_bad_group_is_refused_on_the_calling_thread(group):
    http = RecordingHttp()
    train = master_train(http)
    with pytest.raises(ValueError, match="metric group") as refused:
        train.report_metrics(group, 1, {"x": 1.0})
    assert repr(group) in str(refused.value)  # named, with the rule
    assert "^[A-Za-z][A-Za-z0-9_.-]{0,31}$" in str(refused.value)
    train.report_metrics("fine", 1, {"x": 1.0})  # nothing reached the sender: still usable
    train.close(5)
    assert [r["group"] for r in sent_reports(http)] == ["fine"]
    assert http.threads == {"shipyard-metric-sender"}


def test_a_group_that_is_not_a_string_is_a_type_error(capsys):
    with shipyard.core.init() as ctx:
        with pytest.raises(TypeError, match="metric group must be a string, got int 3"):
            ctx.train.report_metrics(3, 1, {"x": 1.0})  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="metric 'x' must be a number"):
            ctx.train.report_metrics("test", 1, {"x": "high"})
    assert capsys.readouterr().out == ""


def test_the_longest_group_fits_the_master_column():
    http = RecordingHttp()
    train = master_train(http)
    train.report_metrics("g" * 32, 1, {"x": 1.0})
    train.close(5)
    assert sent_reports(http)[0]["group"] == "g" * 32


def test_a_worker_rank_checks_a_group_and_drops_the_report():
    from shipyard.core._chief import WorkerTrain

    worker = WorkerTrain()
    assert worker.report_metrics("test", 1, {"x": 1.0}) is None
    with pytest.raises(ValueError, match="'has space'"):
        worker.report_metrics("has space", 1, {"x": 1.0})
