"""The Models pages in a real browser (Debian's Chromium through Playwright) against a real
master with one model: its version 1 the checkpoint of a short trial, named by the alias
`production`. The list links to the model; the model's page shows its alias and its
version, linked to the trial and the experiment, with the trial's validation metric at the
checkpoint's step. Its screenshot goes to the test's output folder, and to docs/images/
with SHIPYARD_UI_DOC_SCREENSHOTS=1."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests.e2e.master import CODE, Master
from tests.fixtures.chromium import require_browser
from tests.ui.conftest import keep_doc_screenshots

pytestmark = pytest.mark.browser
STEPS = """
name: registry-ui
entrypoint: python3 steps.py
hyperparameters: {steps: 2, ckpt_every: 2, x: 0.5}
searcher: {name: single, metric: val_loss}
max_restarts: 0
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A master of its own with model `digits`: version 1 a finished trial's checkpoint."""
    require_browser()
    master = Master(tmp_path_factory.mktemp("ui-models") / "home", slots=1).start()
    try:
        done = master.wait(master.create(STEPS, CODE)["id"], timeout=90)
        assert done["state"] == "COMPLETED", done
        trial = master.trial(done["trials"][0]["id"])
        for method, path, body in (
            ("POST", "/models", {"name": "digits", "description": "digits classifier"}),
            ("POST", "/models/digits/versions", {"checkpoint_uuid": trial["latest_checkpoint"]}),
            ("PUT", "/models/digits/aliases/production", {"version": 1}),
        ):
            made = master.http.request(method, path, json=body)
            assert made.status_code in (200, 201), made.text
        shots = tmp_path_factory.mktemp("ui-models-screenshots")
        yield SimpleNamespace(master=master, exp_id=done["id"], trial_id=trial["id"], shots=shots)
        keep_doc_screenshots(shots)
    finally:
        master.stop()


def test_the_models_pages_show_versions_with_their_lineage(browser, site):
    page = browser.open("/models", "a[href^='/models/digits']")
    assert page.locator("nav a[data-nav='models']").get_attribute("aria-current") == "page"
    row = page.locator("tbody tr").first
    assert "production → 1" in row.inner_text()
    page.click("a[href^='/models/digits']")
    page.wait_for_selector("caption:text('Versions of digits')", state="attached")
    assert page.locator("h1").inner_text() == "digits"
    assert "digits classifier" in page.locator("main").inner_text()
    version = page.locator("tbody tr").first
    cells = version.locator("td").all_inner_texts()
    assert cells[0] == "1" and cells[1] == "production"
    assert version.locator(f"a[href='/trials/{site.trial_id}']").count() == 1
    assert version.locator(f"a[href='/experiments/{site.exp_id}']").count() == 1
    assert cells[5] == "no git"  # submitted without a git work tree
    assert cells[6] == "val_loss 0.75"  # 0.5² + 1/2 at step 2, the checkpoint's
    browser.screenshot("models")
    # a model that does not exist says so
    page = browser.open("/models/nothing", ".error-box")
    assert "does not exist" in page.locator(".error-box").inner_text()
    browser.errors.clear()  # the 404 answer is logged by the browser as a failed load
