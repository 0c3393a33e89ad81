"""ctx.info, ctx.searcher, ctx.preempt and ctx.distributed as a local script sees them."""

from __future__ import annotations

import json

import pytest

import shipyard.core
from shipyard.common.errors import InvalidRequest


def test_local_defaults():
    with shipyard.core.init() as ctx:
        assert ctx.local
        assert ctx.info.trial_id is None
        assert ctx.info.hparams == {}
        assert ctx.info.latest_checkpoint is None
        assert ctx.info.experiment_config == {}
        assert ctx.searcher.max_length is None
        assert ctx.preempt.should_preempt() is False
        assert ctx.searcher.should_stop() is False
        assert (ctx.distributed.rank, ctx.distributed.size, ctx.distributed.local_rank) == (0, 1, 0)
        assert ctx.distributed.is_chief
        assert ctx.distributed.allgather({"x": 1}) == [{"x": 1}]
        assert ctx.distributed.broadcast(42) == 42


def test_info_and_searcher_come_from_the_environment(monkeypatch, tmp_path):
    config = tmp_path / "experiment.json"
    config.write_text(json.dumps({"name": "quadratic", "searcher": {"metric": "loss"}}))
    monkeypatch.setenv("SHIPYARD_HPARAMS", '{"lr": 0.01, "arch": {"width": 64}}')
    monkeypatch.setenv("SHIPYARD_EXPERIMENT_ID", "4")
    monkeypatch.setenv("SHIPYARD_RUN_ID", "2")
    monkeypatch.setenv("SHIPYARD_TRIAL_SEED", "1234")
    monkeypatch.setenv("SHIPYARD_LATEST_CHECKPOINT", "abc-123")
    monkeypatch.setenv("SHIPYARD_EXPERIMENT_CONFIG", str(config))
    monkeypatch.setenv("SHIPYARD_SEARCHER_MAX_LENGTH", "1000")
    monkeypatch.setenv("SHIPYARD_SEARCHER_METRIC", "loss")

    with shipyard.core.init() as ctx:
        assert ctx.info.hparams == {"lr": 0.01, "arch": {"width": 64}}
        assert ctx.info.experiment_id == 4
        assert ctx.info.run_id == 2
        assert ctx.info.trial_seed == 1234
        assert ctx.info.latest_checkpoint == "abc-123"
        assert ctx.info.experiment_config["name"] == "quadratic"
        assert ctx.searcher.max_length == 1000
        assert ctx.searcher.metric == "loss"


def test_hparams_argument_wins_in_local_mode(monkeypatch):
    monkeypatch.setenv("SHIPYARD_HPARAMS", '{"lr": 0.01}')
    with shipyard.core.init(hparams={"lr": 0.5}) as ctx:
        assert ctx.info.hparams == {"lr": 0.5}


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("SHIPYARD_HPARAMS", "{lr: 1}", "SHIPYARD_HPARAMS is not valid JSON"),
        ("SHIPYARD_HPARAMS", "[1, 2]", "must be a JSON object"),
        ("SHIPYARD_RUN_ID", "first", "SHIPYARD_RUN_ID must be an integer"),
        ("SHIPYARD_SEARCHER_MAX_LENGTH", "10 batches", "SHIPYARD_SEARCHER_MAX_LENGTH"),
        ("SHIPYARD_RANK", "3", "SHIPYARD_RANK=3 and SHIPYARD_SIZE=1"),
    ],
)
def test_bad_environment_names_the_variable(monkeypatch, name, value, message):
    monkeypatch.setenv(name, value)
    with pytest.raises(InvalidRequest, match=message):
        shipyard.core.init()


def test_unreadable_experiment_config_names_the_file(monkeypatch, tmp_path):
    monkeypatch.setenv("SHIPYARD_EXPERIMENT_CONFIG", str(tmp_path / "missing.json"))
    with shipyard.core.init() as ctx:
        with pytest.raises(InvalidRequest, match="missing.json"):
            ctx.info.experiment_config  # noqa: B018 - reading it is the test


def test_a_master_without_a_trial_id_is_refused(monkeypatch):
    monkeypatch.setenv("SHIPYARD_MASTER", "http://127.0.0.1:9")
    with pytest.raises(InvalidRequest, match="SHIPYARD_TRIAL_ID"):
        shipyard.core.init()


def test_a_bad_master_url_is_refused(monkeypatch):
    monkeypatch.setenv("SHIPYARD_TRIAL_ID", "1")
    with pytest.raises(InvalidRequest, match="master url"):
        shipyard.core.init(master="127.0.0.1:8080")


def test_local_searcher_gives_one_operation_to_the_full_length(monkeypatch):
    monkeypatch.setenv("SHIPYARD_SEARCHER_MAX_LENGTH", "64")
    monkeypatch.setenv("SHIPYARD_SEARCHER_TIME_METRIC", "batches")
    with shipyard.core.init() as ctx:
        assert ctx.searcher.target == 64 and ctx.searcher.time_metric == "batches"
        assert [op.length for op in ctx.searcher.operations(default_length=10)] == [64]


def test_local_searcher_operations_need_a_length():
    with shipyard.core.init() as ctx:
        assert [op.length for op in ctx.searcher.operations(default_length=10)] == [10]
        with pytest.raises(InvalidRequest, match="needs a length: set searcher.max_length"):
            list(ctx.searcher.operations())
