"""The diff of two run records (shipyard.common.environment.diff_runs): it finds each
planted change once, and nothing in what differs between any two runs by nature."""

from __future__ import annotations

import copy
import os

import pytest

from shipyard.common.environment import (
    Difference,
    capture_environment,
    diff_runs,
    missing_sections,
)
from shipyard.common.environment.canonical import section_hash
from shipyard.common.environment.diff import CATEGORIES

A100 = {"name": "NVIDIA A100-SXM4-80GB", "memory_mib": 81920}
TORCH = {
    "version": "2.3.1+cu121",
    "cuda": "12.1",
    "cudnn": 8902,
    "nccl": "2.20.5",
    "cpu_capability": "AVX512",
    "debug": False,
}


def rehash(environment: dict) -> dict:
    environment["hashes"] = {k: section_hash(v) for k, v in environment["sections"].items()}
    return environment


@pytest.fixture(scope="module")
def environment() -> dict:
    """A real capture, with a GPU and torch as a GPU machine would have them."""
    record = capture_environment(environ={**os.environ, "NCCL_DEBUG": "INFO"})
    record["sections"]["gpu"] = {"driver": "550.54.14", "cuda_driver": "12040", "devices": [A100]}
    record["sections"]["framework"] = {"torch": dict(TORCH)}
    return rehash(record)


def run_record(environment: dict | None) -> dict:
    return {
        "code": {
            "commit": "a" * 40,
            "branch": "main",
            "remote": "git@example.com:team/model.git",
            "dirty": True,
            "diff_sha256": "1" * 64,
            "context_id": "ctx-1",
            "unpushed": ["a" * 40],
            "message": "not compared",
        },
        "hyperparameters": {"lr": 0.1, "optimizer": {"name": "adam", "beta1": 0.9}},
        "config": {
            "name": "resnet",
            "description": "baseline",
            "labels": ["vision"],
            "hyperparameters": {"lr": {"type": "const", "val": 0.1}},
            "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 100}},
            "resources": {"slots_per_trial": 1},
        },
        "environment": copy.deepcopy(environment),
        "image": {"image": "pytorch/pytorch:2.3.1", "digest": "sha256:" + "d" * 64},
    }


def keys(differences: list[Difference]) -> set[tuple[str, str]]:
    return {(d.category, d.item) for d in differences}


def test_the_13_planted_changes_are_found_and_nothing_else(environment):
    a, b = run_record(environment), run_record(environment)
    sections = b["environment"]["sections"]
    b["code"]["commit"] = "b" * 40
    b["code"]["diff_sha256"] = "2" * 64
    b["hyperparameters"]["optimizer"]["beta1"] = 0.95
    sections["packages"]["pytest"] = "0.0.1"
    sections["packages"]["planted-package"] = "1.0"
    sections["framework"]["torch"].update(cuda="12.4", cudnn=90100, nccl="2.21.5")
    sections["gpu"]["driver"] = "535.161.07"
    sections["gpu"]["devices"][0]["name"] = "NVIDIA H100 80GB HBM3"
    flags = sections["cpu"]["flags"]
    if "avx512f" in flags:
        flags.remove("avx512f")
    else:
        flags.append("avx512f")
    b["image"]["digest"] = "sha256:" + "e" * 64
    sections["env"]["kept"]["NCCL_DEBUG"] = "WARN"
    rehash(b["environment"])

    found = diff_runs(a, b)

    assert keys(found) == {
        ("code", "commit"),
        ("code", "diff"),
        ("hyperparameters", "optimizer.beta1"),
        ("packages", "pytest"),
        ("packages", "planted-package"),
        ("framework", "torch.cuda"),
        ("framework", "torch.cudnn"),
        ("framework", "torch.nccl"),
        ("gpu", "driver"),
        ("gpu", "devices[0].name"),
        ("cpu", "flags.avx512f"),
        ("image", "digest"),
        ("env", "NCCL_DEBUG"),
    }
    assert len(found) == 13
    # In the order of the categories, each with what it was and what it is.
    assert [d.category for d in found] == sorted((d.category for d in found), key=CATEGORIES.index)
    by_item = {(d.category, d.item): d for d in found}
    assert by_item["packages", "planted-package"] == Difference(
        "packages", "planted-package", "added", None, "1.0"
    )
    assert by_item["packages", "pytest"].change == "changed"
    assert by_item["packages", "pytest"].a == pytest.__version__
    assert by_item["env", "NCCL_DEBUG"].to_json() == {
        "category": "env",
        "item": "NCCL_DEBUG",
        "change": "changed",
        "a": "INFO",
        "b": "WARN",
    }
    assert missing_sections(a, b) == []


def test_records_that_differ_only_in_volatile_fields_have_no_differences():
    base = {k: v for k, v in os.environ.items() if not k.startswith("SHIPYARD_")}
    one = capture_environment(environ={**base, "HOSTNAME": "node-1", "SHIPYARD_TRIAL_ID": "1"})
    other = capture_environment(environ={**base, "HOSTNAME": "node-2", "SHIPYARD_TRIAL_ID": "2"})
    other["volatile"].update(hostname="elsewhere", pid=1, gpu_uuids=["GPU-1234"])
    other["errors"] = [{"section": "gpu", "message": "NVML did not answer within 2.0 s"}]
    other["capture_ms"] = 999.0

    assert one["volatile"]["env"] != other["volatile"]["env"]
    assert diff_runs(run_record(one), run_record(other)) == []


def test_stored_hashes_are_not_trusted(environment):
    a, b = run_record(environment), run_record(environment)
    b["environment"]["sections"]["packages"]["numpy"] = "0.1"  # hashes left as they were

    assert keys(diff_runs(a, b)) == {("packages", "numpy")}


def test_a_record_without_an_environment_is_compared_on_the_rest(environment):
    a, b = run_record(environment), run_record(None)
    b["hyperparameters"]["lr"] = 0.2
    del a["environment"]["sections"]["gpu"]  # an older capture without it

    assert keys(diff_runs(a, b)) == {("hyperparameters", "lr")}
    assert missing_sections(a, b) == ["packages", "framework", "gpu", "cpu", "python", "os", "env"]
    assert missing_sections(a, run_record(environment)) == ["gpu"]


def test_config_is_compared_by_path_without_name_description_labels_or_hyperparameters():
    a, b = run_record(None), run_record(None)
    b["config"].update(name="resnet-2", description="other", labels=["x"])
    b["config"]["hyperparameters"] = {"lr": {"type": "const", "val": 0.5}}
    b["config"]["searcher"]["max_length"]["batches"] = 200
    del b["config"]["resources"]
    b["code"]["message"] = "other words"

    assert [d.to_json() for d in diff_runs(a, b)] == [
        {
            "category": "config",
            "item": "resources.slots_per_trial",
            "change": "removed",
            "a": 1,
            "b": None,
        },
        {
            "category": "config",
            "item": "searcher.max_length.batches",
            "change": "changed",
            "a": 100,
            "b": 200,
        },
    ]


def test_gpu_count_and_env_kinds(environment):
    a, b = run_record(environment), run_record(environment)
    b["environment"]["sections"]["gpu"]["devices"].append(dict(A100))
    env_a, env_b = a["environment"]["sections"]["env"], b["environment"]["sections"]["env"]
    env_a["redacted"] = env_b["redacted"] = ["HF_TOKEN"]  # both redacted: equal
    env_a["hashed"]["DATA_DIR"], env_b["hashed"]["DATA_DIR"] = "sha256:aa", "sha256:bb"
    env_b["hashed"]["NEW_VAR"] = "sha256:cc"

    found = diff_runs(a, b)

    assert [d.to_json() for d in found] == [
        {"category": "gpu", "item": "devices", "change": "changed", "a": 1, "b": 2},
        {
            "category": "env",
            "item": "DATA_DIR",
            "change": "changed",
            "a": "sha256:aa",
            "b": "sha256:bb",
        },
        {"category": "env", "item": "NEW_VAR", "change": "added", "a": None, "b": "sha256:cc"},
    ]
