"""What every searcher here shares: Shutdown once, progress, metrics, state, bad calls."""

from __future__ import annotations

import json

import pytest

from shipyard.common.errors import ConfigError, NotSupportedYet
from shipyard.search import Create, ExitReason, Shutdown
from shipyard.search.population import PopulationSearcher
from tests.search.simulate import run_search
from tests.search.spaces import EVERY_TYPE, build, searcher_config, typed

CONFIGS = [
    searcher_config("single"),
    searcher_config("random", max_trials=6, max_concurrent_trials=2),
    searcher_config("grid", max_concurrent_trials=5),
]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c["name"])
def test_shutdown_comes_exactly_once_as_the_last_action(config: dict) -> None:
    run = run_search(build(config, EVERY_TYPE, seed=1))
    assert run.shutdowns == [Shutdown(failure=False)]
    assert run.actions_after_shutdown == 0


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c["name"])
def test_state_round_trip_mid_search_resumes_identically(config: dict) -> None:
    original = build(config, EVERY_TYPE, seed=9)
    running = [r.request_id for r in original.create_trials()]
    # exit one trial and report a metric for another before the "master restart"
    for action in original.on_trial_exit(running.pop(0), ExitReason.COMPLETED):
        if isinstance(action, Create):
            running.append(action.request.request_id)
    if running:
        original.on_validation(running[0], {"loss": 0.25}, 1)

    state = json.loads(json.dumps(original.get_state()))  # as stored in the database
    resumed = build(config, EVERY_TYPE, seed=9)
    resumed.set_state(state)
    assert resumed.progress() == original.progress()
    assert resumed.get_state() == original.get_state()
    while running:
        request_id = running.pop(0)
        expected = original.on_trial_exit(request_id, ExitReason.STOPPED)
        assert resumed.on_trial_exit(request_id, ExitReason.STOPPED) == expected
        running += [a.request.request_id for a in expected if isinstance(a, Create)]
    assert resumed.progress() == 1.0


def test_progress_is_the_fraction_of_trials_exited() -> None:
    searcher = build(searcher_config("random", max_trials=4), EVERY_TYPE, seed=0)
    requests = searcher.create_trials()
    assert searcher.progress() == 0.0
    searcher.on_trial_exit(requests[0].request_id, ExitReason.COMPLETED)
    searcher.on_trial_exit(requests[1].request_id, ExitReason.ERRORED)
    assert searcher.progress() == 0.5


def test_validation_records_the_latest_metric_and_takes_no_action() -> None:
    searcher = build(searcher_config("random", max_trials=2), EVERY_TYPE, seed=0)
    assert isinstance(searcher, PopulationSearcher)
    first, second = (r.request_id for r in searcher.create_trials())
    assert searcher.on_validation(first, {"loss": 0.9}, 1) == []
    assert searcher.on_validation(first, {"loss": 0.4, "accuracy": 0.8}, 1) == []
    assert searcher.on_validation(second, {"accuracy": 0.7}, 1) == []  # no searcher metric
    assert searcher.latest_metrics() == {first: 0.4, second: None}
    assert searcher.get_state()["trials"][first]["metric"] == 0.4


def test_unknown_or_repeated_exit_is_a_clear_error() -> None:
    searcher = build(searcher_config("single"), EVERY_TYPE, seed=0)
    [request] = searcher.create_trials()
    with pytest.raises(ValueError, match="unknown trial request 'r9999'"):
        searcher.on_trial_exit("r9999", ExitReason.COMPLETED)
    with pytest.raises(ValueError, match="unknown trial request 'nope'"):
        searcher.on_validation("nope", {"loss": 1.0}, 1)
    searcher.on_trial_exit(request.request_id, ExitReason.COMPLETED)
    with pytest.raises(ValueError, match="already exited"):
        searcher.on_trial_exit(request.request_id, ExitReason.COMPLETED)


def test_create_trials_twice_is_an_error() -> None:
    searcher = build(searcher_config("single"), EVERY_TYPE, seed=0)
    searcher.create_trials()
    with pytest.raises(ValueError, match="already called"):
        searcher.create_trials()


def test_state_of_another_searcher_is_refused() -> None:
    grid_state = build(searcher_config("grid"), EVERY_TYPE, seed=0).get_state()
    random = build(searcher_config("random", max_trials=3), EVERY_TYPE, seed=0)
    with pytest.raises(ValueError, match="state of a 'grid' searcher"):
        random.set_state(grid_state)


@pytest.mark.parametrize("name", ["adaptive_simple", "custom"])
def test_unsupported_searcher_name_is_refused(name: str) -> None:
    # The config model refuses it: no searcher is ever built for it.
    fields = {"max_trials": 3} if name == "adaptive_simple" else {"max_trials": None}
    with pytest.raises(NotSupportedYet, match=f"{name}.* is not supported yet") as info:
        typed(searcher_config(name, **fields))
    assert info.value.details[0]["path"] == "searcher.name"


def test_unsupported_searcher_message_matches_the_config_error_contract() -> None:
    with pytest.raises(NotSupportedYet) as info:
        typed(searcher_config("adaptive_simple", max_trials=3))
    assert info.value.message == (
        "searcher.name: adaptive_simple (Determined's deprecated adaptive searcher) is not "
        "supported yet; use adaptive_asha, which takes the same max_trials, max_length, mode, "
        "divisor and max_rungs"
    )


def test_a_searcher_without_a_name_is_refused() -> None:
    with pytest.raises(ConfigError) as info:
        typed(searcher_config(None))
    assert info.value.details[0]["path"] == "searcher.name"


@pytest.mark.parametrize(
    ("fields", "path"),
    [
        ({"metric": None}, "searcher.metric"),
        ({"max_concurrent_trials": -1}, "searcher.max_concurrent_trials"),
        ({"max_trials": 0}, "searcher.max_trials"),
        ({"smaller_is_better": "yes"}, "searcher.smaller_is_better"),
    ],
)
def test_bad_searcher_fields_name_their_path(fields: dict, path: str) -> None:
    with pytest.raises(ConfigError) as info:
        build(searcher_config("random", **{"max_trials": 3, **fields}), EVERY_TYPE, 0)
    assert info.value.details[0]["path"] == path
