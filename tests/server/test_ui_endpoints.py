"""Every endpoint the web UI calls exists in the master's API: each "METHOD /path" route of
the UI's modules (static/api.js declares them; web/test/api.test.js checks that every
call goes through one) is a path and method of the app's OpenAPI schema, path parameters
matched by position. No other module of the UI calls fetch or builds an /api/ URL."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from shipyard.server.app import create_app
from shipyard.server.routers import ui
from shipyard.server.settings import Settings

STATIC = Path(ui.STATIC)
ROUTE = re.compile(r"""["'](GET|POST|PUT|PATCH|DELETE) (/[^"'\s]*)["']""")
PARAM = re.compile(r"\{[^}]+\}")


def ui_modules() -> dict[str, str]:
    return {
        p.relative_to(STATIC).as_posix(): p.read_text()
        for p in sorted(STATIC.rglob("*.js"))
        if "vendor" not in p.relative_to(STATIC).parts
    }


def ui_routes() -> set[tuple[str, str]]:
    return {(m, path) for text in ui_modules().values() for m, path in ROUTE.findall(text)}


def shape(path: str) -> str:
    """/experiments/{exp_id}/curves and /experiments/{id}/curves are the same endpoint."""
    return PARAM.sub("{}", path)


@pytest.fixture(scope="module")
def api_operations(tmp_path_factory) -> set[tuple[str, str]]:
    app = create_app(Settings(home=tmp_path_factory.mktemp("home"), slots=1))
    paths = app.openapi()["paths"]
    return {
        (method.upper(), shape(path.removeprefix("/api/v1")))
        for path, operations in paths.items()
        for method in operations
    }


def missing(routes: set[tuple[str, str]], operations: set[tuple[str, str]]) -> list[str]:
    return sorted(f"{m} {p}" for m, p in routes if (m, shape(p)) not in operations)


def test_every_route_the_ui_calls_is_in_the_openapi_schema(api_operations):
    routes = ui_routes()
    # api.js's routes: reads of every page and the experiment actions.
    assert len(routes) >= 20, routes
    assert ("POST", "/experiments/{id}/kill") in routes
    assert missing(routes, api_operations) == []


def test_a_route_the_master_lacks_is_found_missing(api_operations):
    made_up = {("GET", "/experiments/{id}/no-such-view"), ("DELETE", "/trials/{id}")}
    assert missing(made_up | ui_routes(), api_operations) == [
        "DELETE /trials/{id}",
        "GET /experiments/{id}/no-such-view",
    ]


def test_only_api_js_talks_to_the_master():
    for name, text in ui_modules().items():
        if name == "api.js":
            continue
        assert "fetch(" not in text, name
        assert "/api/" not in text.replace('startsWith("/api/")', ""), name
        assert not ROUTE.search(text), name
