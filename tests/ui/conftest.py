"""The web UI's browser tests: a real master with a finished ASHA search, an experiment
whose trial failed and a running experiment, and Debian's Chromium driven by Playwright
(no browser download)."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.e2e.master import Master
from tests.fixtures.chromium import CHROMIUM, CHROMIUM_ARGS, require_browser

ROOT = Path(__file__).resolve().parents[2]
QUADRATIC = ROOT / "examples" / "quadratic"
CODE = Path(__file__).parent / "trial_code"
DOC_IMAGES = ROOT / "docs" / "images"
VIEWPORT = {"width": 1280, "height": 800}
# Chromium aborts its requests when any of the machine's network interfaces changes, which
# the container tests running beside these do (their bridges and veth pairs): the page's
# requests then fail with this, through no fault of the page, and the page is loaded again.
NETWORK_CHANGED = "net::ERR_NETWORK_CHANGED"
TWO_FRAMES = "new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))"


def asha_config() -> str:
    """The ASHA example, searching its target too: two hyperparameters for the heat map."""
    config = yaml.safe_load((QUADRATIC / "asha.yaml").read_text())
    config["description"] = "Adaptive ASHA over the learning rate and target of a quadratic"
    config["labels"] = ["asha", "tutorial"]
    config["hyperparameters"]["target"] = {"type": "double", "minval": 1.0, "maxval": 5.0}
    return yaml.safe_dump(config)


# One trial that exits with code 3 at once: an errored experiment, and a recent failure.
FAILING_CONFIG = """
name: failing
entrypoint: python3 fails.py
searcher: {name: single, metric: val_loss}
max_restarts: 0
"""


def live_config(inbox: Path) -> str:
    """Three trials of echo.py on a two-slot master: two run, one waits for a slot."""
    return yaml.safe_dump(
        {
            "name": "live-echo",
            "description": "Trials that run until paused and print what the test asks",
            "labels": ["live"],
            "entrypoint": "python3 echo.py",
            "hyperparameters": {
                "inbox": str(inbox),
                "lr": {"type": "log", "base": 10, "minval": -2, "maxval": 0},
            },
            "searcher": {
                "name": "random",
                "metric": "val_loss",
                "max_trials": 3,
                "max_concurrent_trials": 3,
            },
            "max_restarts": 0,
            "reproducibility": {"experiment_seed": 3},
        }
    )


@dataclass
class Site:
    """The master the pages show, and what runs on it."""

    master: Master
    asha: dict  # the finished ASHA experiment (detail)
    failed: dict  # the errored one-trial experiment (detail)
    live_id: int  # the running experiment
    live_trials: list[int]  # its running trials
    inbox: Path
    shots: Path  # where screenshots go (the test's output)

    def say(self, trial_id: int, text: str) -> None:
        """Make a running echo trial print `text` (one line)."""
        folder = self.inbox / str(trial_id)
        tmp = folder / "say.tmp"
        tmp.write_text(text + "\n")
        tmp.rename(folder / f"{time.monotonic_ns()}.txt")


def keep_doc_screenshots(shots: Path) -> None:
    """docs/'s pictures: copied from a module's screenshots on request only, so a test run
    leaves the tracked files as they are (SHIPYARD_UI_DOC_SCREENSHOTS=1 pytest tests/ui)."""
    if os.environ.get("SHIPYARD_UI_DOC_SCREENSHOTS") == "1":
        DOC_IMAGES.mkdir(parents=True, exist_ok=True)
        for png in sorted(shots.glob("ui-*.png")):
            shutil.copyfile(png, DOC_IMAGES / png.name)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    require_browser()
    base = tmp_path_factory.mktemp("ui")
    master = Master(base / "home", slots=2).start()
    live_id = None
    try:
        asha = master.wait(master.create(asha_config(), QUADRATIC, "ada")["id"], timeout=120)
        assert asha["state"] == "COMPLETED", asha
        failed = master.wait(master.create(FAILING_CONFIG, CODE, "grace")["id"], timeout=60)
        assert failed["state"] == "ERRORED", failed
        inbox = base / "inbox"
        inbox.mkdir()
        live_id = master.create(live_config(inbox), CODE)["id"]

        def running_and_ready():
            trials = [t for t in master.experiment(live_id)["trials"] if t["state"] == "RUNNING"]
            ready = [t["id"] for t in trials if "echo trial ready" in master.logs(t["id"])]
            return ready if len(ready) == 2 else None

        live_trials = master.wait_for(running_and_ready, timeout=60, what="two echo trials")
        shots = tmp_path_factory.mktemp("ui-screenshots")
        yield Site(master, asha, failed, live_id, live_trials, inbox, shots)
        keep_doc_screenshots(shots)
    finally:
        if live_id is not None:  # its trials never end by themselves
            master.http.post(f"/experiments/{live_id}/kill")
            master.wait(live_id, timeout=60)
        master.stop()


@pytest.fixture(scope="module")
def playwright_driver(site):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        yield playwright


def log_in_with_ticket(context, master: Master) -> None:
    """Log the browser in as the master's local user, as the link `shipyard up` prints does:
    a single-use ticket the master turns into the session cookie, then on to the UI."""
    r = master.http.post("/auth/tickets")
    assert r.status_code == 201, r.text
    page = context.new_page()
    try:
        page.goto(f"{master.url}/login?ticket={r.json()['ticket']}")
        page.wait_for_url(master.url + "/")
        page.wait_for_selector("#account:not([hidden])")
    finally:
        page.close()


@pytest.fixture(scope="module")
def browser_context(site, playwright_driver):
    """The browser the tests share, logged in as the local user (the master's admin)."""
    with tempfile.TemporaryDirectory(prefix="shipyard-chromium-") as profile:
        context = playwright_driver.chromium.launch_persistent_context(
            profile,
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_ARGS,
            viewport=VIEWPORT,
            color_scheme="light",
        )
        try:
            log_in_with_ticket(context, site.master)
            yield context
        finally:
            context.close()


@pytest.fixture(scope="module")
def chromium(playwright_driver):
    """A second browser, for contexts of their own: cookies nobody else shares."""
    browser = playwright_driver.chromium.launch(
        executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
    )
    yield browser
    browser.close()


class Browser:
    """A page of the UI that remembers every console error and uncaught exception."""

    def __init__(self, page, site: Site) -> None:
        self.page = page
        self.site = site
        self.errors: list[str] = []
        self.network_changes = 0
        self.dark = False
        page.on("console", self._console)
        page.on("pageerror", lambda exc: self.errors.append(f"uncaught: {exc}"))

    def _console(self, message) -> None:
        if message.type != "error":
            return
        if NETWORK_CHANGED in message.text:
            self.network_changes += 1
        else:
            self.errors.append(f"console error at {self.page.url}: {message.text}")

    def open(self, path: str, ready: str, dark: bool = False, timeout_ms: float = 10_000):
        """Load `path` (in the dark theme: the system's preference, emulated) and wait until
        `ready` (a CSS selector) shows; loaded once more if the machine's network changed
        meanwhile (NETWORK_CHANGED)."""
        from playwright.sync_api import Error as PlaywrightError

        self.dark = dark
        self.page.emulate_media(color_scheme="dark" if dark else "light")
        changes = self.network_changes
        try:
            return self._load(path, ready, timeout_ms)
        except PlaywrightError as exc:
            if self.network_changes == changes and NETWORK_CHANGED not in str(exc):
                raise
        return self._load(path, ready, timeout_ms)

    def _load(self, path: str, ready: str, timeout_ms: float):
        self.page.goto(self.site.master.url + path)
        self.page.wait_for_selector(ready, timeout=timeout_ms)
        return self.page

    def screenshot(self, name: str) -> None:
        """ui-<name>.png (ui-<name>-dark.png) in the test's output folder."""
        # The charts draw in an animation frame: the second frame from now comes after it.
        self.page.evaluate(TWO_FRAMES)
        file = f"ui-{name}{'-dark' if self.dark else ''}.png"
        self.page.screenshot(path=str(self.site.shots / file), full_page=True)


@pytest.fixture
def browser(browser_context, site):
    page = browser_context.new_page()
    ui = Browser(page, site)
    yield ui
    page.close()
    assert not ui.errors, "\n".join(ui.errors)


@pytest.fixture
def new_browser(chromium, site):
    """Makes a page in a new browser context: a browser that has not logged in (cookies
    are per host, not per port, so each master a test starts needs a context of its own).
    Each page's console errors fail the test, as the shared browser's do."""
    made: list[tuple[object, Browser]] = []

    def make() -> Browser:
        context = chromium.new_context(viewport=VIEWPORT, color_scheme="light")
        ui = Browser(context.new_page(), site)
        made.append((context, ui))
        return ui

    yield make
    for context, _ui in made:
        context.close()
    errors = [e for _context, ui in made for e in ui.errors]
    assert not errors, "\n".join(errors)
