"""PooledBackend routes each trial to its pool's backend: two real local backends stand in
for two engines (a local pool and another pool)."""

from __future__ import annotations

import sys

import pytest

from shipyard.backends.base import RunStatus, TrialLaunchSpec
from shipyard.backends.local.backend import LocalBackend
from shipyard.backends.pooled import LOCAL, PooledBackend
from tests.fixtures.poll import poll


def spec(tmp_path, slots, code: str, name: str) -> TrialLaunchSpec:
    return TrialLaunchSpec(
        trial_id=1,
        run_id=1,
        argv=[sys.executable, "-c", code],
        env={},
        workdir=str(tmp_path),
        slots=slots,
        log_path=str(tmp_path / f"{name}.log"),
    )


def wait_exit(backend, handle, timeout=20.0):
    return poll(
        lambda: backend.poll(handle),
        "the trial to exit",
        until=lambda state: state.status != RunStatus.RUNNING,
        timeout_s=timeout,
    )


def test_each_trial_runs_on_its_pools_backend_and_is_found_again(tmp_path):
    local, other = LocalBackend(slots=2), LocalBackend(slots=1)
    pooled = PooledBackend({LOCAL: local, "other": other})
    slots = {s.id: s for s in pooled.capacity()}
    assert list(slots) == ["cpu0", "cpu1", "other/cpu0"]  # unique ids, the pool as prefix
    assert [s.id for s in pooled.capacity_of("other")] == ["other/cpu0"]

    handle = pooled.launch(spec(tmp_path, [slots["other/cpu0"]], "print('hi')", "a"))
    assert handle.data["pool"] == "other"
    assert wait_exit(pooled, handle).exit_code == 0
    assert pooled.read_output(handle, 0, final=True)[0] == b"hi\n"
    # A restarted master routes the stored handle to the same pool's backend.
    again = PooledBackend({LOCAL: LocalBackend(slots=2), "other": LocalBackend(slots=1)})
    recovered = again.recover(dict(handle.data))
    assert recovered is not None and recovered.data["pool"] == "other"
    assert again.poll(recovered).exit_code == 0

    handle = pooled.launch(spec(tmp_path, [slots["cpu1"]], "raise SystemExit(3)", "b"))
    assert handle.data["pool"] == LOCAL
    assert wait_exit(pooled, handle).exit_code == 3
    # A pool removed from the config: its trials are requeued, not routed elsewhere.
    assert PooledBackend({LOCAL: local}).recover({**handle.data, "pool": "gone"}) is None


def test_a_trial_cannot_span_pools(tmp_path):
    pooled = PooledBackend({LOCAL: LocalBackend(slots=1), "other": LocalBackend(slots=1)})
    with pytest.raises(ValueError, match="must come from one pool"):
        pooled.launch(spec(tmp_path, pooled.capacity(), "pass", "c"))
