from __future__ import annotations

from pathlib import Path

import pytest

from shipyard.common.errors import ConfigError

CONFIGS = Path(__file__).parent / "configs"


def config_error(load, *args) -> ConfigError:
    """The ConfigError a load raises (a test helper that fails if none is raised)."""
    with pytest.raises(ConfigError) as info:
        load(*args)
    return info.value


def detail_at(error: ConfigError, path: str) -> dict:
    found = [d for d in error.details if d["path"] == path]
    assert found, f"no problem reported at {path!r}; got {error.details}"
    return found[0]
