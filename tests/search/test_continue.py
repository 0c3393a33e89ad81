"""Reopening an ended population search (`experiment continue`): the trials named train
again, a larger max_trials adds trials as the concurrency limit lets them start, and the
search shuts down again once they exit."""

from __future__ import annotations

from shipyard.search import Create, ExitReason, Shutdown
from tests.search.spaces import EVERY_TYPE, build, searcher_config


def _ended(max_trials: int, seed: int = 7):
    config = searcher_config("random", max_trials=max_trials, max_concurrent_trials=2)
    searcher = build(config, EVERY_TYPE, seed)
    requests = searcher.create_trials()
    actions = []
    for request in requests:
        actions += searcher.on_trial_exit(request.request_id, ExitReason.COMPLETED)
    assert isinstance(actions[-1], Shutdown)
    return searcher, [r.request_id for r in requests]


def test_reopened_trials_exit_again_and_the_search_shuts_down_again():
    searcher, ids = _ended(max_trials=2)
    assert searcher.reopen([ids[1]]) == [] and searcher.unstarted() == 0
    assert searcher.on_trial_exit(ids[1], ExitReason.COMPLETED) == [Shutdown(failure=False)]


def test_more_trials_come_as_the_concurrency_limit_allows_with_the_same_points():
    searcher, ids = _ended(max_trials=1)
    grown = build(searcher_config("random", max_trials=4, max_concurrent_trials=2), EVERY_TYPE, 7)
    grown.set_state(searcher.get_state())
    assert grown.unstarted() == 3
    first = grown.reopen([])
    assert [r.request_id for r in first] == ["r0002", "r0003"]
    fresh = build(searcher_config("random", max_trials=4, max_concurrent_trials=4), EVERY_TYPE, 7)
    assert [r.hparams for r in first] == [r.hparams for r in fresh.create_trials()[1:3]]
    actions = grown.on_trial_exit("r0002", ExitReason.COMPLETED)
    assert [a.request.request_id for a in actions if isinstance(a, Create)] == ["r0004"]
