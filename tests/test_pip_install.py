"""tools/pip_install.py hands pip's own settings to uv: a machine whose pip finds packages only
through its configuration (a folder of wheels, local indexes, a constraint file, a CA bundle)
installs the same set with uv as with pip."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parents[1] / "tools" / "pip_install.py"


def load_tool():
    spec = importlib.util.spec_from_file_location("pip_install", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def pip_conf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in list(os.environ):
        if name.startswith("PIP_") or name == "SSL_CERT_FILE":
            monkeypatch.delenv(name)
    # pip reads the test's file last, and neither XDG's nor the user's (/etc/pip.conf it
    # reads anyway; the test's file overrides what it sets)
    monkeypatch.setenv("XDG_CONFIG_DIRS", str(tmp_path / "xdg"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    conf = tmp_path / "pip.conf"
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    return conf


def test_pips_files_and_variables_become_uvs_flags(pip_conf: Path, monkeypatch) -> None:
    pip_conf.write_text(
        "[global]\n"
        "find-links = /opt/wheels\n"
        "extra-index-url = file:///opt/a/simple file:///opt/b/simple\n"
        "constraint = /etc/pip-constraints.txt\n"
        "cert = /etc/ca.pem\n"
        "timeout = 60\n"
        "[install]\n"
        "index-url = https://mirror.example/simple\n"
    )
    monkeypatch.setenv("PIP_FIND_LINKS", "/opt/wheels")  # the same folder again: once
    flags, env = load_tool().pip_settings()
    # uv takes a version's files from the first index that has it: pip's main index first,
    # so that a partial mirror among the extra ones does not decide which wheel is installed
    assert flags == [
        *("--index-url", "https://mirror.example/simple"),
        *("--extra-index-url", "https://mirror.example/simple"),
        *("--extra-index-url", "file:///opt/a/simple"),
        *("--extra-index-url", "file:///opt/b/simple"),
        *("--find-links", "/opt/wheels"),
        *("--constraint", "/etc/pip-constraints.txt"),
    ]
    assert env["SSL_CERT_FILE"] == "/etc/ca.pem"


def test_without_an_index_url_pypi_comes_before_the_extra_indexes(pip_conf: Path) -> None:
    pip_conf.write_text("[global]\nextra-index-url = file:///opt/a/simple\n")
    flags, _env = load_tool().pip_settings()
    assert flags == [
        *("--index-url", "https://pypi.org/simple"),
        *("--extra-index-url", "https://pypi.org/simple"),
        *("--extra-index-url", "file:///opt/a/simple"),
    ]
