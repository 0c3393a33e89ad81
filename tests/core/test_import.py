"""shipyard.core is imported by every trial process: it must stay light."""

from __future__ import annotations

import subprocess
import sys

# numpy too: the TensorBoard writer imports it at its first write (shipyard.core._tfevents_numpy).
HEAVY = ["pydantic", "httpx", "torch", "numpy", "sqlalchemy", "fastapi", "shipyard.server"]

CHECK = f"""
import sys
{{setup}}
loaded = [name for name in {HEAVY!r} if name in sys.modules]
print(",".join(loaded))
"""


def loaded_after(setup: str, env: dict[str, str] | None = None) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-c", CHECK.format(setup=setup)],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )
    assert result.returncode == 0, result.stderr
    return [name for name in result.stdout.strip().split(",") if name]


def test_import_loads_nothing_heavy():
    assert loaded_after("import shipyard.core") == []


def test_init_in_local_mode_loads_nothing_heavy_and_no_http_client():
    setup = (
        "import shipyard.core\n"
        "shipyard.core.init().close()\n"
        "assert 'http.client' not in sys.modules, 'local mode needs no HTTP'"
    )
    assert loaded_after(setup) == []


def test_init_with_a_master_loads_nothing_heavy():
    # init() does not contact the master, so an address nobody listens on is fine here.
    setup = (
        "import os\n"
        "os.environ.update(SHIPYARD_MASTER='http://127.0.0.1:9', SHIPYARD_TRIAL_ID='7')\n"
        "import shipyard.core\n"
        "ctx = shipyard.core.init()\n"
        "assert ctx.info.trial_id == 7 and not ctx.local"
    )
    assert loaded_after(setup) == []
