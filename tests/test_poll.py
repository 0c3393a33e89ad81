"""The tests' poll helper: it returns the answer waited for, and a wait that fails says what
was waited for and the last answer seen."""

from __future__ import annotations

import pytest

from tests.fixtures.poll import PollTimeout, poll


def test_returns_the_first_answer_that_is_the_one_waited_for():
    answers = iter([ConnectionError("not yet"), {"state": "RUNNING"}, {"state": "DONE"}])

    def answer() -> dict:
        value = next(answers)
        if isinstance(value, Exception):
            raise value
        return value

    done = poll(
        answer,
        "the end",
        until=lambda answer: answer["state"] == "DONE",
        every_s=0,
        ignore=(ConnectionError,),
    )
    assert done == {"state": "DONE"}


def test_a_wait_that_fails_says_what_it_waited_for_and_the_last_answer():
    with pytest.raises(PollTimeout, match=r"for the trial to exit; last seen: 'RUNNING'") as err:
        poll(lambda: "RUNNING", "the trial to exit", until=lambda s: s != "RUNNING", timeout_s=0)
    assert err.value.last == "RUNNING"


def test_an_answer_that_raises_fails_at_once():
    def exited():
        raise RuntimeError("master exited")

    with pytest.raises(RuntimeError, match="master exited"):
        poll(exited, "the master to answer", ignore=(ConnectionError,))


def test_a_slowing_wait_pauses_longer_each_time_up_to_its_limit():
    pauses: list[float] = []
    answers = iter(range(8))
    poll(lambda: next(answers) == 7, "the eighth", every_s=0.1, slow_to_s=0.2, pause=pauses.append)
    assert pauses == pytest.approx([0.1, 0.125, 0.15625, 0.1953125, 0.2, 0.2, 0.2])
