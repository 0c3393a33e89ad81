"""Environment capture at a rank's start: how long capture_environment() takes when it is
the first thing a fresh interpreter does with it, on a path that holds at least
DISTRIBUTIONS installed distributions, the GPU probe included.

The venv's own distributions are topped up with realistic fake ones (METADATA with the
headers and long description a wheel has, RECORD, WHEEL, top_level.txt) in a temporary
site directory put on PYTHONPATH. Each of RUNS fresh interpreters imports the package and
calls the capture once, so the first-call costs (importing pynvml, reading every
METADATA cold from Python's side) count each time, as they do in a trial. Prints one JSON
object. Target: p95 of the call under 200 ms, and torch never imported by it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from _stats import percentile, summary

from shipyard.common.environment import capture_environment

RUNS = 30
DISTRIBUTIONS = 300
TARGET_P95_MS = 200.0

CHILD = """
import json, sys, time
started = time.perf_counter()
from shipyard.common.environment import capture_environment
imported = time.perf_counter()
record = capture_environment()
done = time.perf_counter()
print(json.dumps({
    "import_ms": (imported - started) * 1000,
    "capture_ms": (done - imported) * 1000,
    "distributions": len(record["sections"]["packages"]),
    "torch_imported": "torch" in sys.modules,
    "gpu": record["sections"]["gpu"],
    "errors": record["errors"],
}))
"""

DESCRIPTION = (
    "# {name}\n\nA library that does one thing well.\n\n## Install\n\n    pip install {name}\n\n"
    + "## Usage\n\nSome prose about the API, with an example or two.\n\n" * 60
)


def fake_metadata(name: str, version: str) -> str:
    headers = [
        "Metadata-Version: 2.1",
        f"Name: {name}",
        f"Version: {version}",
        "Summary: A library that does one thing well",
        f"Home-page: https://example.org/{name}",
        "Author: Someone",
        "Author-email: someone@example.org",
        "License: BSD-3-Clause",
        f"Project-URL: Documentation, https://example.org/{name}/docs",
        f"Project-URL: Source, https://example.org/{name}/src",
        "Requires-Python: >=3.9",
        *(f"Classifier: Programming Language :: Python :: 3.{m}" for m in range(8, 14)),
        "Classifier: License :: OSI Approved :: BSD License",
        "Classifier: Operating System :: OS Independent",
        "Classifier: Development Status :: 5 - Production/Stable",
        "Requires-Dist: numpy>=1.22",
        "Requires-Dist: typing-extensions>=4.0; python_version < '3.11'",
        "Provides-Extra: test",
        "Requires-Dist: pytest>=7; extra == 'test'",
        "Description-Content-Type: text/markdown",
    ]
    return "\n".join(headers) + "\n\n" + DESCRIPTION.format(name=name)


def fake_site(directory: Path, count: int) -> None:
    for i in range(count):
        # Names in every spelling PEP 503 folds: Fake_Pkg.7, fake-pkg-8, ...
        name = ("Fake_Pkg.{}", "fake-pkg-{}", "fake_pkg_{}")[i % 3].format(i)
        version = f"{i % 7}.{i % 13}.{i % 5}"
        dist = directory / f"{name.replace('-', '_').replace('.', '_')}-{version}.dist-info"
        dist.mkdir()
        (dist / "METADATA").write_text(fake_metadata(name, version))
        (dist / "WHEEL").write_text(
            "Wheel-Version: 1.0\nGenerator: bdist_wheel\nRoot-Is-Purelib: true\n"
        )
        (dist / "INSTALLER").write_text("pip\n")
        (dist / "top_level.txt").write_text(f"fake_pkg_{i}\n")
        records = [f"fake_pkg_{i}/m{j}.py,sha256=abc,{100 + j}" for j in range(40)]
        (dist / "RECORD").write_text("\n".join(records) + "\n")


def main() -> None:
    installed = len(capture_environment()["sections"]["packages"])
    fakes = max(0, DISTRIBUTIONS - installed)
    with tempfile.TemporaryDirectory() as tmp:
        fake_site(Path(tmp), fakes)
        env = {**os.environ, "PYTHONPATH": tmp}
        runs = []
        for _ in range(RUNS):
            out = subprocess.run(
                [sys.executable, "-c", CHILD],
                env=env,
                capture_output=True,
                text=True,
                check=True,
                timeout=60,
            )
            runs.append(json.loads(out.stdout))
    capture = [r["capture_ms"] for r in runs]
    imports = [r["import_ms"] for r in runs]
    p95 = percentile(capture, 0.95)
    distributions = min(r["distributions"] for r in runs)
    torch_imported = any(r["torch_imported"] for r in runs)
    result = {
        "benchmark": "environment_capture",
        "unit": "ms",
        "what": "capture_environment() called once in a fresh interpreter, at a trial's start",
        "runs": RUNS,
        "distributions": distributions,
        "fake_distributions": fakes,
        "capture_ms": {
            "p50": round(percentile(capture, 0.5), 2),
            "p95": round(p95, 2),
            **summary(capture, 2),
        },
        "import_ms": {
            "p50": round(percentile(imports, 0.5), 2),
            "p95": round(percentile(imports, 0.95), 2),
        },
        "gpu_probe": runs[0]["gpu"].get("note", "NVML answered"),
        "errors": sorted({e["message"] for r in runs for e in r["errors"]}),
        "torch_imported_by_capture": torch_imported,
        "target": f"p95 < {TARGET_P95_MS:.0f} ms",
        "passed": p95 < TARGET_P95_MS and distributions >= DISTRIBUTIONS and not torch_imported,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
