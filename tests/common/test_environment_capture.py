"""The capture of a rank's environment (shipyard.common.environment): what it records, that
it survives broken metadata and a hanging NVML, that it never imports torch, that no
secret reaches the record, and that it hashes the same machine the same way twice."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from shipyard.common.environment import canonical_json, capture_environment
from shipyard.common.environment.canonical import section_hash

HANGING_NVML = Path(__file__).parents[1] / "fixtures" / "hanging_nvml"
SECTIONS = {"python", "packages", "framework", "gpu", "cpu", "os", "env"}


def dist_info(site: Path, dirname: str, metadata: bytes | None) -> Path:
    where = site / dirname
    where.mkdir()
    if metadata is not None:
        (where / "METADATA").write_bytes(metadata)
    return where


def metadata(name: str, version: str) -> bytes:
    # Name and Version in the headers, then a body with lines that look like headers.
    return (
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nSummary: s\n"
        f"Requires-Dist: numpy>=1.20\n\nName: not-this\nVersion: 0\n"
    ).encode()


def run_python(code: str, timeout_s: float = 60) -> dict:
    """Runs code in a fresh interpreter; it prints one JSON object last."""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout_s
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_record_has_every_section_its_hash_and_volatile_part():
    record = capture_environment(environ={"NCCL_DEBUG": "INFO", "HOSTNAME": "node-7"})

    assert record["schema"] == 1
    assert set(record["sections"]) == SECTIONS == set(record["hashes"])
    for name, section in record["sections"].items():
        assert record["hashes"][name] == section_hash(section)
    sections = record["sections"]
    assert sections["python"]["version"] == ".".join(map(str, sys.version_info[:3]))
    assert sections["python"]["executable"] == sys.executable
    assert sections["packages"]["pytest"] == pytest.__version__
    # No NVIDIA driver here: an ordinary CPU machine, not an error.
    assert sections["gpu"]["devices"] == []
    assert sections["cpu"]["logical_cpus"] == os.cpu_count()
    assert sections["cpu"]["flags"] == sorted(sections["cpu"]["flags"])
    assert sections["os"]["kernel"] == os.uname().release
    assert sections["env"]["kept"] == {"NCCL_DEBUG": "INFO"}
    assert record["volatile"]["env"]["hashed"] == {
        "HOSTNAME": "sha256:" + hashlib.sha256(b"node-7").hexdigest()
    }
    assert record["volatile"]["pid"] == os.getpid()
    assert record["volatile"]["captured_at"].endswith("Z")
    assert record["errors"] == []
    assert record["capture_ms"] > 0
    json.loads(canonical_json(record))


def test_package_names_are_canonical_and_the_first_on_the_path_wins(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    dist_info(first, "Foo_Bar.baz-2.0.dist-info", metadata("Foo_Bar.baz", "2.0"))
    dist_info(second, "foo_bar_baz-1.0.dist-info", metadata("foo-bar-baz", "1.0"))
    legacy = second / "legacy.egg-info"
    legacy.mkdir()
    (legacy / "PKG-INFO").write_text("Metadata-Version: 1.0\nName: Legacy\nVersion: 0.3\n")
    (second / "old.egg-info").write_text("Metadata-Version: 1.0\nName: old\nVersion: 0.1\n")

    record = capture_environment(path=[str(first), str(second), str(tmp_path / "gone")])

    assert record["sections"]["packages"] == {"foo-bar-baz": "2.0", "legacy": "0.3", "old": "0.1"}
    assert record["errors"] == []


def test_broken_dist_info_is_an_error_naming_it_and_the_rest_are_recorded(tmp_path):
    dist_info(tmp_path, "good-1.0.dist-info", metadata("good", "1.0"))
    missing = dist_info(tmp_path, "missing-1.0.dist-info", None)
    garbage = dist_info(tmp_path, "garbage-1.0.dist-info", bytes(range(256)) * 40)
    dist_info(tmp_path, "other-3.1.dist-info", metadata("other", "3.1"))

    record = capture_environment(path=[str(tmp_path)])

    assert record["sections"]["packages"] == {"good": "1.0", "other": "3.1"}
    messages = [e["message"] for e in record["errors"] if e["section"] == "packages"]
    assert len(messages) == 2
    assert any(str(missing) in m for m in messages)
    assert any(str(garbage) in m for m in messages)


def test_a_hanging_nvml_is_an_error_and_the_capture_returns_in_time():
    code = f"""
import json, sys, time
sys.path.insert(0, {str(HANGING_NVML)!r})
from shipyard.common.environment import capture_environment
started = time.perf_counter()
record = capture_environment(nvml_timeout_s=0.5)
took = time.perf_counter() - started
import pynvml
print(json.dumps({{"took": took, "stand_in": pynvml.__file__, "record": record}}))
"""
    out = run_python(code)

    assert out["stand_in"] == str(HANGING_NVML / "pynvml.py")
    assert out["took"] < 1.0
    record = out["record"]
    assert {"section": "gpu", "message": "NVML did not answer within 0.5 s"} in record["errors"]
    assert record["sections"]["gpu"] == {"devices": []}
    assert record["sections"]["packages"]  # the other probes ran meanwhile


def test_capture_in_a_fresh_interpreter_imports_no_torch_pydantic_or_httpx():
    code = """
import json, sys
from shipyard.common.environment import capture_environment
record = capture_environment()
heavy = [m for m in ("torch", "pydantic", "httpx") if m in sys.modules]
print(json.dumps({"heavy": heavy, "framework": record["sections"]["framework"],
                  "torch_installed": "torch" in record["sections"]["packages"]}))
"""
    out = run_python(code)

    assert out["torch_installed"]  # it is on the path: the capture saw it and left it there
    assert out["heavy"] == []
    assert out["framework"] == {}


@pytest.mark.torch
def test_framework_section_reads_torch_when_the_trial_imported_it():
    code = """
import json, torch
from shipyard.common.environment import capture_environment
record = capture_environment()
print(json.dumps({"torch": torch.__version__, "cuda": torch.version.cuda,
                  "framework": record["sections"]["framework"], "errors": record["errors"]}))
"""
    out = run_python(code, timeout_s=120)

    torch_section = out["framework"]["torch"]
    assert torch_section["version"] == out["torch"]
    assert torch_section["cuda"] == out["cuda"]
    assert {"cudnn", "nccl", "cpu_capability", "debug"} <= set(torch_section)
    assert out["errors"] == []


def test_no_secret_value_nor_its_hash_reaches_the_record():
    injected = "injected-secret-7f3a9c"
    secrets = {
        "HF_TOKEN": "hf_aaaabbbbccccdddd",
        "MY_SECRET_VALUE": "hunter2-but-longer",
        "DB_PASSWORD": "correct-horse-battery",
        "GITHUBTOKEN": "ghp_0123456789abcdef",
        "FOO": injected,
        "BAR": f"https://user:{injected}@example.com/repo.git",  # holds it
        "NCCL_SOCKET_SECRETLESS": injected,  # a kept prefix does not save it
        "SHIPYARD_RUN_TOKEN": "volatile-and-secret",
    }
    environ = {
        **secrets,
        "SHIPYARD_MASK_ENV": "FOO",
        "NCCL_DEBUG": "INFO",
        "HOME": "/home/someone",
        "KEYBOARD_LAYOUT": "us",
    }

    record = capture_environment(environ=environ, secret_values=[injected])

    blob = canonical_json(record)
    for value in secrets.values():
        assert value.encode() not in blob
        assert hashlib.sha256(value.encode()).hexdigest().encode() not in blob
    env = record["sections"]["env"]
    assert env["redacted"] == sorted(set(secrets) - {"SHIPYARD_RUN_TOKEN"})
    assert record["volatile"]["env"]["redacted"] == ["SHIPYARD_RUN_TOKEN"]
    assert env["kept"] == {"NCCL_DEBUG": "INFO"}
    assert set(env["hashed"]) == {"HOME", "KEYBOARD_LAYOUT"}


def test_the_variables_the_mask_list_names_are_redacted_without_secret_values():
    environ = {
        "SHIPYARD_MASK_ENV": "FOO",
        "FOO": "plain-looking-value",
        "COPY": "plain-looking-value",
    }

    record = capture_environment(environ=environ)

    assert record["sections"]["env"]["redacted"] == ["COPY", "FOO"]
    assert b"plain-looking-value" not in canonical_json(record)


def test_two_captures_hash_every_section_the_same():
    first, second = capture_environment(), capture_environment()

    assert first["hashes"] == second["hashes"]
    assert first["volatile"]["captured_at"] <= second["volatile"]["captured_at"]


def test_canonical_json_does_not_depend_on_insertion_order():
    one = {"b": {"y": 1, "x": [2, {"q": 1, "p": 2}]}, "a": "ü"}
    other = {"a": "ü", "b": {"x": [2, {"p": 2, "q": 1}], "y": 1}}

    assert (
        canonical_json(one)
        == canonical_json(other)
        == '{"a":"ü","b":{"x":[2,{"p":2,"q":1}],"y":1}}'.encode()
    )
    assert section_hash(one) == section_hash(other)
    assert section_hash(one) == "sha256:" + hashlib.sha256(canonical_json(one)).hexdigest()
