"""The experiment most benchmarks run: examples/quadratic, one of its configs made into a
search of the benchmark's size."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from _master import REPO

EXAMPLE = REPO / "examples" / "quadratic"


def search_config(
    directory: Path,
    name: str,
    *,
    base: str = "random.yaml",
    pool: str | None = None,
    **searcher: Any,
) -> Path:
    """examples/quadratic/<base> named ``name``, its searcher updated with ``searcher``
    (max_trials, max_concurrent_trials, ...), on ``pool`` if given; written to
    ``directory``/<name>.yaml."""
    config = yaml.safe_load((EXAMPLE / base).read_text())
    config["name"] = name
    config["searcher"].update(searcher)
    if pool is not None:
        config["resources"]["resource_pool"] = pool
    path = directory / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path
