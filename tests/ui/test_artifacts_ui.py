"""The trial page's Artifacts tab in a real browser (Debian's Chromium through Playwright)
against a real master whose trial logged a PNG at steps 1 and 2, a table, a text and files
(tests/e2e/trial_code/artifacts_trial.py): the gallery shows both steps, the newest first,
each image loaded (decoded by the browser); the table's cells, the text as text (its markup
not run), and each file as a download link. Its screenshot goes to the test's output
folder, and to docs/images/ with SHIPYARD_UI_DOC_SCREENSHOTS=1."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests.e2e.master import CODE, Master
from tests.e2e.test_artifacts import GOOD
from tests.e2e.trial_code.artifacts_trial import TEXT
from tests.fixtures.chromium import require_browser
from tests.ui.conftest import keep_doc_screenshots

pytestmark = pytest.mark.browser
IMAGES_LOADED = """
() => {
  const images = [...document.querySelectorAll(".gallery img")];
  return images.length > 0 && images.every((img) => img.complete && img.naturalWidth > 0);
}
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A master of its own with one finished trial that logged artifacts (the shared site's
    ASHA search has none, and costs more than this whole module)."""
    require_browser()
    master = Master(tmp_path_factory.mktemp("ui-artifacts") / "home", slots=1).start()
    try:
        done = master.wait(master.create(GOOD, CODE)["id"], timeout=90)
        assert done["state"] == "COMPLETED", done
        shots = tmp_path_factory.mktemp("ui-artifacts-screenshots")
        yield SimpleNamespace(master=master, trial_id=done["trials"][0]["id"], shots=shots)
        keep_doc_screenshots(shots)
    finally:
        master.stop()


def test_the_artifacts_tab_shows_the_images_by_step_and_the_tables_cells(browser, site):
    page = browser.open(f"/trials/{site.trial_id}?tab=artifacts", ".gallery img")
    page.wait_for_function(IMAGES_LOADED, timeout=10_000)
    # both steps, the newest first, each with its image decoded by the browser
    steps = page.locator(".artifact-step")
    assert [steps.nth(i).get_attribute("data-step") for i in range(steps.count())] == ["2", "1"]
    for step in ("1", "2"):
        image = page.locator(
            f".artifact-step[data-step='{step}'] figure[data-artifact='samples.png'] img"
        )
        assert image.evaluate("img => img.naturalWidth") == 2  # the 2x2 PNG the trial made
        assert image.get_attribute("alt") == f"samples.png, step {step}"
    # the table logged at step 2: its columns and cells
    table = page.locator(".artifact-table[data-artifact='predictions']")
    table.locator("tbody tr").first.wait_for()
    assert table.locator("thead th").all_inner_texts() == ["epoch", "accuracy", "label"]
    cells = [row.locator("td").all_inner_texts() for row in table.locator("tbody tr").all()]
    assert cells == [["1", "0.5", "cat"], ["2", "0.75", "—"]]
    # the text as text: its markup is shown, not made into elements
    text = page.locator(".artifact-text[data-artifact='notes'] pre")
    text.wait_for()
    assert text.inner_text().strip() == TEXT.strip()  # "<b>not bold</b>" as written
    assert page.locator(".artifact-text b").count() == 0
    # every other file is a download
    for name in ("weights.bin", "page.html", "drawing.svg"):
        link = page.locator(f"a[download='{name}']")
        assert link.count() == 1, name
        assert link.get_attribute("href").endswith("/content")
    browser.screenshot("trial-artifacts")
    assert not browser.errors, browser.errors
