"""ctx.should_preempt_or_stop(): with several ranks, the chief's two answers in one
collective."""

from __future__ import annotations

from tests.core.test_distributed import run_ranks

BOTH_IN_ONE = """
import json
import shipyard.core

with shipyard.core.init() as ctx:
    d = ctx.distributed
    if d.is_chief:
        ctx.preempt._inner.should_preempt = lambda: False
        ctx.searcher._inner.should_stop = lambda: True
        answer = ctx.should_preempt_or_stop()
    else:
        # One collective: the worker's single plain broadcast is matched with it.
        answer = tuple(d.broadcast(None))
    after = d.allgather(d.rank)  # the ranks are still in step
    print("RESULT " + json.dumps({"answer": answer, "after": after}))
"""


def test_preempt_and_stop_travel_in_one_broadcast_from_the_chief(tmp_path):
    ranks = run_ranks(tmp_path, BOTH_IN_ONE, size=2)
    for rank in ranks:
        assert rank.returncode == 0, rank.stderr
        assert rank.result() == {"answer": [False, True], "after": [0, 1]}


def test_one_process_asks_both_contexts(monkeypatch):
    import shipyard.core

    monkeypatch.delenv("SHIPYARD_MASTER", raising=False)
    with shipyard.core.init() as ctx:  # no master: nothing is ever preempted or stopped
        assert ctx.should_preempt_or_stop() == (False, False)
        ctx.searcher.should_stop = lambda: True  # type: ignore[method-assign]
        assert ctx.should_preempt_or_stop() == (False, True)
