"""Resource pools from the master's config file: each pool gets its slots, problems name
the file and the field."""

import pytest

from shipyard.backends.base import Slot
from shipyard.common.errors import ConfigError
from shipyard.server.pools import MasterConfig, load_master_config, partition

SLOTS = [Slot(id=f"cpu{i}", kind="cpu", device="cpu", index=i) for i in range(4)]


def pools_of(yaml_text, tmp_path):
    path = tmp_path / "master.yaml"
    path.write_text(yaml_text)
    return partition(SLOTS, load_master_config(path))


def test_without_a_config_one_default_pool_holds_every_slot_without_preemption():
    pools = partition(SLOTS, MasterConfig())
    assert list(pools) == ["default"]
    assert [s.id for s in pools["default"].slots] == ["cpu0", "cpu1", "cpu2", "cpu3"]
    assert pools["default"].preemption is False


def test_counts_take_slots_in_order_and_the_open_pool_takes_the_rest(tmp_path):
    pools = pools_of(
        """
resource_pools:
  - pool_name: rest
  - pool_name: small
    slots: 1
    scheduler: {type: priority, preemption: true}
  - pool_name: named
    slots: [cpu3]
""",
        tmp_path,
    )
    assert {name: [s.id for s in p.slots] for name, p in pools.items()} == {
        "rest": ["cpu1", "cpu2"],
        "small": ["cpu0"],
        "named": ["cpu3"],
    }
    assert pools["small"].preemption and not pools["rest"].preemption


@pytest.mark.parametrize(
    ("yaml_text", "path", "message"),
    [
        ("resource_pools: [{pool_name: a, slots: 5}]", "resource_pools.0.slots", "5 slots asked"),
        ("resource_pools: [{pool_name: a, slots: [gpu7]}]", "resource_pools.0.slots", "gpu7"),
        (
            "resource_pools: [{pool_name: a}, {pool_name: b}]",
            "resource_pools",
            "only one local pool",
        ),
    ],
)
def test_pools_that_do_not_fit_the_machine_are_refused(tmp_path, yaml_text, path, message):
    with pytest.raises(ConfigError) as info:
        pools_of(yaml_text, tmp_path)
    assert [d["path"] for d in info.value.details] == [path]
    assert message in info.value.details[0]["message"]


@pytest.mark.parametrize(
    ("yaml_text", "path", "message"),
    [
        ("resource_pools: [{pool_name: a, slot: 1}]", "resource_pools.0.slot", "Extra inputs"),
        (
            "resource_pools: [{pool_name: a, scheduler: {type: fair_share, preemption: true}}]",
            "resource_pools.0.scheduler",
            "preemption needs the priority scheduler",
        ),
        ("resource_pools: [{pool_name: a}, {pool_name: a}]", "<config>", "repeated: a"),
        ("default_compute_pool: b\nresource_pools: [{pool_name: a}]", "<config>", "'b'"),
        ("resource_pools: [{pool_name: a, type: nomad}]", "resource_pools.0", "unknown backend"),
        (
            "resource_pools: [{pool_name: a, type: kubernetes, slots_per_pod: 0}]",
            "resource_pools.0.slots_per_pod",
            "greater than or equal to 1",
        ),
        ("resource_pools: [{pool_name: a b}]", "resource_pools.0.pool_name", "pattern"),
    ],
)
def test_config_mistakes_name_the_file_and_field(tmp_path, yaml_text, path, message):
    with pytest.raises(ConfigError) as info:
        pools_of(yaml_text, tmp_path)
    assert str(tmp_path / "master.yaml") in info.value.message
    assert info.value.details[0]["path"] == path
    assert message in info.value.details[0]["message"]


def test_a_master_with_a_bad_config_file_says_why_and_exits_2(tmp_path):
    import subprocess
    import sys

    config = tmp_path / "master.yaml"
    config.write_text("resource_pools:\n  - pool_name: big\n    slots: 99\n")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "shipyard.server",
            "--home",
            str(tmp_path / "home"),
            "--slots",
            "2",
            "--port",
            "0",
            "--config",
            str(config),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "resource_pools.0.slots: 99 slots asked, 2 left of 2" in done.stderr
