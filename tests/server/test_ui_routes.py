"""The master serves the web UI: the same page at every path a person may open or reload
(the front-end routes on the path), every file that page loads, and a 404 in the API's
error shape for anything else. Needs src/shipyard/server/web/index.html (the front-end)."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from shipyard.server.routers import ui
from tests.e2e.master import Master
from tests.fixtures.plain_http import NO_TLS

# /login too: a browser without a session gets the page (its script shows the login form),
# and so does the link a used or expired ticket leads to.
PAGES = (
    "/",
    "/experiments/1",
    "/experiments/12345",
    "/trials/7",
    "/cluster",
    "/models",
    "/models/digits",
    "/login",
    "/login?expired=1",
)


@pytest.fixture(scope="module")
def master(tmp_path_factory):
    m = Master(tmp_path_factory.mktemp("ui") / "home", slots=1).start()
    yield m
    m.stop()


@pytest.fixture(scope="module")
def web(master):
    with httpx.Client(base_url=master.url, timeout=30, verify=NO_TLS) as client:
        yield client


def test_every_ui_path_answers_the_page_and_is_revalidated(web):
    bodies = set()
    for path in PAGES:
        r = web.get(path)
        assert r.status_code == 200, path
        assert r.headers["content-type"].startswith("text/html"), path
        assert r.headers["cache-control"] == "no-cache", path
        bodies.add(r.text)
    [page] = bodies  # one page: the front-end reads the path
    assert "<html" in page.lower()


def test_every_file_the_page_loads_is_served(web):
    page = web.get("/").text
    files = re.findall(r"""(?:src|href)=["'](/static/[^"']+)["']""", page)
    assert files, page[:500]
    for path in files:
        r = web.get(path)
        assert r.status_code == 200, path
        assert r.content, path
        assert r.headers["cache-control"] == "no-cache", path


def test_the_page_preloads_every_module_of_the_front_end(web):
    # A module left out still works, but its import is fetched a round trip later.
    static = Path(ui.STATIC)
    modules = {
        "/static/" + p.relative_to(static).as_posix()
        for p in static.rglob("*.js")
        if "vendor" not in p.relative_to(static).parts
    }
    page = web.get("/").text
    preloaded = set(re.findall(r"""<link rel="modulepreload" href="([^"]+)">""", page))
    assert preloaded == modules


@pytest.mark.parametrize(
    "path",
    ["/experiments/abc", "/trials/-1", "/experiments/1/more", "/static/no-such-file.js", "/nope"],
)
def test_other_paths_are_404_in_the_apis_error_shape(web, path):
    r = web.get(path)
    assert r.status_code == 404
    assert r.json()["error"]["type"] == "NotFound"


def test_the_ui_is_not_part_of_the_api_schema(web):
    paths = web.get("/openapi.json").json()["paths"]
    assert all(p.startswith("/api/v1/") for p in paths), [p for p in paths if "/api/" not in p]
