"""Experiment.to_dataframe() without pandas (an optional extra): a clear ImportError before
anything is asked of the master."""

from __future__ import annotations

import sys

import pytest

from shipyard.client.handles import Experiment


def test_to_dataframe_says_how_to_install_pandas(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # `import pandas` raises ImportError
    exp = Experiment.model_construct(id=1)
    exp._session = None  # type: ignore[assignment]  # never used: pandas is checked first
    with pytest.raises(ImportError, match=r"pip install 'shipyard\[pandas\]'"):
        exp.to_dataframe()
