"""Every YAML example in docs/config.md loads (blocks starting with `# invalid` must not)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from shipyard.common.config import load_config
from shipyard.common.errors import ConfigError

DOC = Path(__file__).resolve().parents[2] / "docs" / "config.md"
BLOCKS = re.findall(r"```yaml\n(.*?)```", DOC.read_text(), flags=re.S)


def test_the_reference_has_examples():
    assert len(BLOCKS) >= 8


@pytest.mark.parametrize("block", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_doc_example(block):
    if block.lstrip().startswith("# invalid"):
        with pytest.raises(ConfigError):
            load_config(block, "config.md")
    else:
        load_config(block, "config.md")
