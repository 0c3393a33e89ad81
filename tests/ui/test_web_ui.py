"""The web UI in a real browser (Debian's Chromium through Playwright) against a real master
with a finished ASHA search, a failed experiment and a running one: every page loads without
a console error, the learning curves have one line per trial, two selected trials open the
compare view, which says what they ran differently (the hyperparameters that differ), a line
a running trial prints shows within 2 s, the pause button pauses, the cluster page lists the
failed trial, the trial page shows its own checkpoints, draws its metrics on a log scale and
shows what a run ran (the Python and packages the trials ran with; code, GPUs, variables and
probe errors of a richer record; a run that captured nothing says so). The browser logs in
as a person does: with the link `shipyard up` prints (a single-use ticket) or the login
page's password form; a browser that has not is sent to the login page and back, Log out
ends the session, and a write without the CSRF header the page sends is refused. Each
page's screenshot (light, and dark for the main ones) goes to the test's output folder, and
to docs/images/ for docs/ui.md with SHIPYARD_UI_DOC_SCREENSHOTS=1."""

from __future__ import annotations

import copy
import json
import re
import sys
import time
import uuid
from urllib.parse import quote

import pytest

from tests.e2e.master import Master
from tests.fixtures.poll import poll
from tests.ui.conftest import log_in_with_ticket

pytestmark = pytest.mark.browser


def best_trial(site) -> int:
    return site.asha["best_trial_id"]


def views(site):
    """(screenshot name, path, selector that shows once the page has its data, also dark)."""
    asha = f"/experiments/{site.asha['id']}"
    best = best_trial(site)
    curves = "#curves-chart[data-series-count]"
    parallel = "#parallel-coordinates[data-series-count]"
    return [
        ("experiments", "/", "tbody tr[data-key]", True),
        ("experiment-curves", asha, curves, True),
        ("experiment-hparams", f"{asha}?tab=hparams", parallel, True),
        ("experiment-rungs", f"{asha}?tab=rungs", ".rung li", False),
        ("experiment-trials", f"{asha}?tab=trials", "tbody tr[data-key]", False),
        ("experiment-config", f"{asha}?tab=config", "pre.code-block", False),
        ("experiment-running", f"/experiments/{site.live_id}", curves, False),
        ("trial-metrics", f"/trials/{best}", ".chart[data-series-count]", True),
        ("trial-checkpoints", f"/trials/{best}?tab=checkpoints", "a[download]", False),
        ("trial-runs", f"/trials/{best}?tab=runs", "tbody tr", False),
        ("trial-environment", f"/trials/{best}?tab=environment", "section[data-rank]", False),
        ("cluster", "/cluster", "tbody tr", True),
    ]


def test_every_page_loads_without_a_console_error(browser, site):
    for name, path, ready, dark in views(site):
        browser.open(path, ready)
        browser.screenshot(name)
        if dark:
            browser.open(path, ready, dark=True)
            browser.screenshot(name)
        assert not browser.errors, browser.errors  # the fixture checks too; this names the page


def test_the_learning_curves_have_one_line_per_trial(browser, site):
    exp = site.asha
    page = browser.open(f"/experiments/{exp['id']}", "#curves-chart[data-series-count]")
    lines = int(page.get_attribute("#curves-chart", "data-series-count"))
    curves = site.master.http.get(
        f"/experiments/{exp['id']}/curves", params={"name": exp["metric"]}
    ).json()
    assert lines == len(curves) == len(exp["trials"]) == 16
    # The trials table below the chart has one row per trial too.
    assert page.locator("tbody tr[data-key]").count() == 16


def test_selecting_two_trials_opens_the_compare_view(browser, site):
    exp = site.asha
    page = browser.open(f"/experiments/{exp['id']}?tab=trials", "tbody tr[data-key]")
    compare = page.locator("button[data-action=compare]")
    assert compare.is_disabled()
    rows = page.locator("tbody tr[data-key]")
    chosen = [int(rows.nth(i).get_attribute("data-key")) for i in (0, 1)]
    for i in (0, 1):
        rows.nth(i).locator("input[type=checkbox]").check()
    compare.click()
    page.wait_for_selector("[data-view=compare]")
    page.wait_for_selector(".compare-table thead a")  # the trials' details have loaded
    assert re.search(r"compare=(\d+)%2C(\d+)|compare=(\d+),(\d+)", page.url)
    heads = page.locator(".compare-table thead a").all_inner_texts()
    assert heads == [f"Trial {t}" for t in chosen]
    # Every metric the two reported, overlaid: each chart has both trials' lines.
    page.wait_for_selector(".chart[data-series-count='2']")
    assert page.locator(".compare-table tr.diff").count() >= 1  # their lr differs
    page.wait_for_selector(".run-diff")  # what they ran differently, from the master's diff
    browser.screenshot("compare")
    page.go_back()
    page.wait_for_selector("tbody tr[data-key]")  # back to the trials tab, no reload


def test_the_environment_tab_shows_the_python_and_packages_the_trial_ran_with(browser, site):
    """The trials ran on this venv: its Python version, and pyyaml among its packages."""
    trial_id = best_trial(site)
    page = browser.open(f"/trials/{trial_id}?tab=environment", "section[data-rank='0']")
    rank = page.locator("section[data-rank='0']")
    python = "{}.{}.{}".format(*sys.version_info[:3])
    assert python in rank.locator("dl.facts").inner_text()
    assert page.locator("section[aria-label=Code]").is_visible()  # no git record: it says so
    packages = rank.locator("details:has(summary:text-matches('^Packages'))")
    packages.locator("summary").click()
    packages.get_by_label("Filter packages").fill("PyYAML")  # as pip compares names
    names = packages.locator("tbody tr td:first-child").all_inner_texts()
    assert names == ["pyyaml"], names
    recorded = site.master.http.get(f"/trials/{trial_id}/environment").json()
    version = recorded["ranks"][0]["record"]["sections"]["packages"]["pyyaml"]
    assert packages.locator("tbody tr td").nth(1).inner_text() == version


def richer_environment(recorded: dict) -> dict:
    """The trial's recorded environment as a run on two GPU ranks from a git work tree with
    uncommitted changes would have it (this master has no GPU and took no git record)."""
    env = copy.deepcopy(recorded)
    env["code"] = {
        "commit": "0123456789abcdef0123456789abcdef01234567",
        "branch": "main",
        "remote": "https://example.com/team/models.git",
        "dirty": True,
        "changed_files": 2,
        "diff_bytes": 64,
        "diff_sha256": "ab" * 32,
        "diff": "diff --git a/train.py b/train.py\n-lr = 0.1\n+lr = 0.2\n",
        "unpushed": ["1111111", "2222222"],
        "unpushed_truncated": False,
        "root": "/home/ada/models",
        "subdirectory": "quadratic",
    }
    record = env["ranks"][0]["record"]
    record["sections"]["framework"] = {
        "torch": {
            "version": "2.3.0",
            "cuda": "12.1",
            "cudnn": 8902,
            "nccl": "2.20.5",
            "cpu_capability": "AVX2",
            "debug": False,
        }
    }
    a100 = {"name": "NVIDIA A100-SXM4-40GB", "memory_mib": 40960}
    record["sections"]["gpu"] = {
        "driver": "550.54.15",
        "cuda_driver": "12.4",
        "devices": [a100, a100],
    }
    record["sections"]["env"] = {
        "kept": {"NCCL_DEBUG": "INFO"},
        "hashed": {"PATH": "sha256:" + "cd" * 32},
        "redacted": ["WANDB_API_KEY"],
    }
    record["errors"] = [{"section": "gpu", "message": "NVML answered after the timeout"}]
    env["ranks"].append({**env["ranks"][0], "rank": 1})  # the same hashes: said in a line
    return env


def test_the_environment_tab_shows_the_code_gpus_variables_and_errors_of_a_run(browser, site):
    trial_id = best_trial(site)
    recorded = site.master.http.get(f"/trials/{trial_id}/environment").json()
    fake = json.dumps(richer_environment(recorded))
    browser.page.route(
        re.compile(rf"/api/v1/trials/{trial_id}/environment(\?|$)"),
        lambda route: route.fulfill(status=200, content_type="application/json", body=fake),
    )
    page = browser.open(f"/trials/{trial_id}?tab=environment", "section[data-rank='1']")
    code = page.locator("section[aria-label=Code]")
    facts = code.locator("dl.facts").inner_text()
    for shown in ("0123456789ab", "main", "example.com/team/models.git", "2 files", "quadratic"):
        assert shown in facts, (shown, facts)
    code.locator("summary", has_text="uncommitted changes").click()
    assert "+lr = 0.2" in code.locator("pre").inner_text()
    rank = page.locator("section[data-rank='0']")
    facts = rank.locator("dl.facts").inner_text()
    for shown in (
        "2.3.0",
        "12.1",
        "8902",
        "2.20.5",
        "AVX2",
        "2 × NVIDIA A100-SXM4-40GB (40,960 MiB)",
        "550.54.15 (CUDA 12.4)",
    ):
        assert shown in facts, (shown, facts)
    variables = rank.locator("details:has(summary:text-matches('^Environment variables'))")
    variables.locator("summary").click()
    rows = dict(r.split("\t") for r in variables.locator("tbody tr").all_inner_texts())
    assert rows == {"NCCL_DEBUG": "INFO", "PATH": "(hashed)", "WANDB_API_KEY": "(redacted)"}
    assert "gpu: NVML answered after the timeout" in rank.get_by_role("note").inner_text()
    assert "the same environment as rank 0" in page.locator("section[data-rank='1']").inner_text()
    browser.screenshot("trial-environment-gpus")


def test_a_run_that_recorded_no_environment_says_so(browser, site):
    failed = site.failed["trials"][0]["id"]  # it exits before it captures anything
    page = browser.open(f"/trials/{failed}?tab=environment", "[data-capture=none]")
    assert "recorded no environment" in page.inner_text("[data-capture=none]")


def test_the_compare_view_says_what_two_trials_ran_differently(browser, site):
    a, b, c = (t["id"] for t in site.asha["trials"][:3])
    page = browser.open(f"/experiments/{site.asha['id']}?compare={a},{b}", ".run-diff")
    caption = f"What trials {a} and {b} ran differently"
    table = page.locator(f".run-diff table:has(caption:text-is('{caption}'))")
    rows = [r.split("\t") for r in table.locator("tbody tr").all_inner_texts()]
    hparams = {r[1]: (r[3], r[4]) for r in rows if r[0] == "Hyperparameters"}
    diff = site.master.http.get(f"/trials/{a}/diff/{b}").json()
    expected = {d["item"] for d in diff["differences"] if d["category"] == "hyperparameters"}
    assert "lr" in expected and set(hparams) == expected, (hparams, expected)
    lr = next(d for d in diff["differences"] if d["item"] == "lr")
    assert tuple(map(float, hparams["lr"])) == (lr["a"], lr["b"])  # exact, not rounded
    # Three trials: each against the first, with a column naming the other trial.
    page = browser.open(f"/experiments/{site.asha['id']}?compare={a},{b},{c}", ".run-diff table")
    trials = page.locator(".run-diff tbody tr td:first-child").all_inner_texts()
    assert set(trials) == {str(b), str(c)}, trials


def test_tables_are_navigable_with_the_keyboard(browser, site):
    page = browser.open(f"/experiments/{site.asha['id']}?tab=trials", "tbody tr[data-key]")
    first = page.locator("tbody tr[data-key]").first
    first.focus()
    page.keyboard.press("ArrowDown")
    second = page.locator("tbody tr[data-key]").nth(1)
    assert second.evaluate("row => row === document.activeElement")
    trial_id = second.get_attribute("data-key")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/trials/{trial_id}")
    page.wait_for_selector(".chart[data-series-count]")


def test_filters_live_in_the_query_string(browser, site):
    page = browser.open("/", "tbody tr[data-key]")
    assert page.locator("tbody tr[data-key]").count() == 3  # asha, failing, live-echo
    page.get_by_label("Search").fill("quadratic")
    page.wait_for_url(re.compile(r"\?q=quadratic$"))
    assert page.locator("tbody tr[data-key]").count() == 1
    page.reload()  # a shared link shows the same filtered list
    page.wait_for_selector("tbody tr[data-key]")
    assert page.get_by_label("Search").input_value() == "quadratic"
    assert page.locator("tbody tr[data-key]").count() == 1


def test_the_experiments_of_one_user(browser, site):
    page = browser.open("/", "tbody tr[data-key]")
    page.get_by_label("User").select_option("ada")
    page.wait_for_url(re.compile(r"\?user=ada$"))
    rows = page.locator("tbody tr[data-key]")
    assert rows.count() == 1 and "ada" in rows.first.inner_text()
    page.reload()  # a shared link shows the same user's experiments
    page.wait_for_selector("tbody tr[data-key]")
    assert page.locator("tbody tr[data-key]").count() == 1
    page.locator("tbody tr[data-key]").first.get_by_role("button", name="ada").click()
    assert page.get_by_label("User").input_value() == "ada"


def test_a_line_the_trial_prints_shows_in_its_logs_within_2_s(browser, site):
    trial_id = site.live_trials[0]
    long_polls = api_requests(browser.page, rf"/api/v1/trials/{trial_id}/logs\?.*wait_s=[1-9]")
    page = browser.open(f"/trials/{trial_id}?tab=logs", ".log-line")
    page.wait_for_selector("#log-view >> text=echo trial ready")
    poll(lambda: long_polls, "the page's long poll", timeout_s=10, pause=in_page_time(page))
    line = f"hello from the browser test {uuid.uuid4().hex}"
    started = time.monotonic()
    site.say(trial_id, line)
    page.wait_for_selector(f"#log-view >> text={line}", timeout=5_000)
    elapsed = time.monotonic() - started
    print(f"the line showed after {elapsed:.2f} s")
    assert elapsed < 2.0, f"the line showed after {elapsed:.2f} s"
    # The level filter reads the level from the text.
    site.say(trial_id, "WARNING: the learning rate looks high")
    site.say(trial_id, "ERROR: something the test made up")
    page.wait_for_selector("#log-view >> text=ERROR: something the test made up")
    page.get_by_label("Level").select_option("error")
    assert page.locator(".log-line").all_inner_texts() == ["ERROR: something the test made up"]
    assert "level=error" in page.url
    page.get_by_label("Level").select_option("all")
    browser.screenshot("trial-logs")
    browser.open(f"/trials/{trial_id}?tab=logs", f"#log-view >> text={line}", dark=True)
    browser.screenshot("trial-logs")


def test_the_pause_button_pauses_the_experiment(browser, site):
    page = browser.open(f"/experiments/{site.live_id}", "button[data-action=pause]")
    pause = f"{site.master.url}/api/v1/experiments/{site.live_id}/pause"
    with page.expect_request(lambda r: r.method == "POST" and r.url == pause) as sent:
        page.click("button[data-action=pause]")
    site.master.wait(site.live_id, timeout=10, states={"PAUSED"})
    # The page follows: the experiment offers Activate now, without a reload.
    page.wait_for_selector("button[data-action=activate]", timeout=10_000)
    # A write made with the session cookie carries the CSRF token the cookie came with.
    assert sent.value.all_headers().get("x-csrf-token") == cookie(page, "shipyard_csrf")


def test_a_write_with_the_cookie_but_without_the_csrf_header_is_refused(browser, site):
    """What another site's page could send with the browser's cookie: no CSRF header."""
    page = browser.open(f"/experiments/{site.live_id}", "#account:not([hidden])")
    url = f"{site.master.url}/api/v1/experiments/{site.live_id}"
    state = site.master.experiment(site.live_id)["state"]
    refused = page.request.post(f"{url}/kill")  # the browser's cookies, no header
    assert refused.status == 403, refused.text()
    assert "X-CSRF-Token" in refused.json()["error"]["message"]
    assert site.master.experiment(site.live_id)["state"] == state  # not killed
    assert page.request.post(f"{url}/pause").status == 403
    # The same request with the header the page sends is accepted.
    csrf = {"X-CSRF-Token": cookie(page, "shipyard_csrf")}
    sent = page.request.post(f"{url}/pause", headers=csrf)
    assert sent.status == 200, sent.text()
    assert site.master.experiment(site.live_id)["state"] == "PAUSED"


def test_the_cluster_page_lists_the_failed_trial_and_no_completed_one(browser, site):
    failed = site.failed["trials"][0]["id"]
    page = browser.open("/cluster", f"a[href='/trials/{failed}?tab=logs']")
    failures = page.locator("table:has(caption:text-is('Recent failures')) tbody tr")
    rows = failures.all_inner_texts()
    assert len(rows) == 1, rows  # no ASHA trial: they completed or were stopped
    assert "failing" in rows[0] and "ERRORED" in rows[0] and "exited with code 3" in rows[0]


def test_the_trial_page_shows_its_checkpoints_and_only_a_summary_of_its_experiment(browser, site):
    trial_id = best_trial(site)
    exp_id = site.asha["id"]
    page = browser.page
    whole = api_requests(page, rf"/api/v1/experiments/{exp_id}(\?|$)")
    summary = api_requests(page, rf"/api/v1/experiments/{exp_id}/summary")
    browser.open(f"/trials/{trial_id}?tab=checkpoints", "a[download]")
    own = site.master.http.get(f"/trials/{trial_id}/checkpoints").json()
    assert own and all(c["trial_id"] == trial_id for c in own)
    caption = f"Checkpoints of trial {trial_id}"
    rows = page.locator(f"table:has(caption:text-is('{caption}')) tbody tr")
    assert rows.count() == len(own)
    first = rows.first.locator("td").nth(1).inner_text()
    assert first == f"{own[-1]['steps_completed']:,}"  # the latest first
    crumb = page.locator(f".breadcrumbs a[href='/experiments/{exp_id}']").inner_text()
    assert crumb == f"{site.asha['name']} ({exp_id})"
    assert len(summary) == 1 and whole == []  # not the experiment with all its trials


def test_the_trials_metrics_can_be_drawn_on_a_log_scale_and_smoothed(browser, site):
    trial_id = best_trial(site)
    page = browser.open(f"/trials/{trial_id}", ".chart[data-series-count]")
    charts = page.locator(".chart[data-series-count]").count()
    page.get_by_label("Log scale").check()
    page.wait_for_url(re.compile(r"[?&]log=1"))
    page.wait_for_selector(".chart[data-series-count]")
    assert page.locator(".chart[data-series-count]").count() == charts
    page.get_by_label("Smoothing").fill("0.6")
    page.wait_for_url(re.compile(r"[?&]smooth=0\.6"))
    page.reload()  # the link keeps both
    page.wait_for_selector(".chart[data-series-count]")
    assert page.get_by_label("Log scale").is_checked()
    assert page.get_by_label("Smoothing").input_value() == "0.6"


def test_an_empty_master_says_how_to_submit_an_experiment(new_browser, tmp_path):
    empty = Master(tmp_path / "home", slots=1).start()
    try:
        browser = new_browser()  # the shared browser's cookie is the other master's
        log_in_with_ticket(browser.page.context, empty)
        browser.page.goto(empty.url + "/")
        browser.page.wait_for_selector(".empty-state")
        assert "shipyard experiment create config.yaml ." in browser.page.inner_text(".empty-state")
        browser.dark = False
        browser.screenshot("empty")
    finally:
        empty.stop()


def api_requests(page, pattern: str) -> list[str]:
    """The URLs of the API requests the page makes from now on that match `pattern`."""
    seen: list[str] = []
    page.on("request", lambda request: re.search(pattern, request.url) and seen.append(request.url))
    return seen


def in_page_time(page):
    """A pause for poll() that lets the page run (and its events reach the test)."""
    return lambda seconds: page.wait_for_timeout(seconds * 1000)


def asks_nothing_more(page) -> None:
    """Let a minute of the page's time pass at once (every timer it set fires: a poller
    still going asks again), then wait for a request of the test's own: whatever the page
    asked before it has been seen by then. The page's clock must have been installed."""
    page.clock.run_for(60_000)
    with page.expect_request(re.compile(r"/api/v1/master\?after-the-page$")):
        page.evaluate("fetch('/api/v1/master?after-the-page').then((answer) => answer.status)")


def test_a_page_left_while_it_loads_asks_no_more(browser, site):
    """Leaving the running experiment's page before its first answer arrives (client-side
    navigation) stops its polling: the late answer starts nothing."""
    exp_id = site.live_id
    browser.page.clock.install()
    page = browser.open("/", f"a[href='/experiments/{exp_id}']")
    held = []
    page.route(f"**/api/v1/experiments/{exp_id}", lambda route: held.append(route))  # it waits
    page.click(f"a[href='/experiments/{exp_id}']")
    poll(lambda: held, "the experiment page's request", timeout_s=5, pause=in_page_time(page))
    page.click("a[data-nav=cluster]")
    page.wait_for_selector("h1:has-text('Cluster')")
    later = api_requests(page, rf"/api/v1/experiments/{exp_id}(/|\?|$)")
    try:
        held[0].continue_()  # the page has aborted it; a late answer must change nothing
    except Exception:
        pass
    page.unroute(f"**/api/v1/experiments/{exp_id}")
    asks_nothing_more(page)
    assert later == []


@pytest.mark.parametrize("what", ["trials", "experiments"])
def test_a_page_of_nothing_says_so_and_stops_asking(browser, site, what):
    page = browser.page
    page.clock.install()
    asked = api_requests(page, rf"/api/v1/{what}/99999(/|\?|$)")
    browser.open(f"/{what}/99999", ".error-box")
    assert f"{what[:-1]} 99999 does not exist" in page.inner_text(".error-box")
    asks_nothing_more(page)
    assert len(asked) == 1, asked
    assert page.inner_text("#live-status") == ""  # not "Master not answering; retrying"
    # The browser reports the 404 as a console error; it is the one this test expects.
    browser.errors[:] = [e for e in browser.errors if "status of 404" not in e]


# -- Logging in and out ------------------------------------------------------------------

PASSWORD = "a long enough password"


def make_user(site, username: str) -> str:
    """A user with a password, made by the local user (an admin)."""
    r = site.master.http.post("/users", json={"username": username, "password": PASSWORD})
    assert r.status_code == 201, r.text
    return username


def log_in(page, username: str, password: str) -> None:
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()


def cookie(page, name: str) -> str | None:
    """The value of the browser's cookie for the page's master, None without one."""
    found = [c for c in page.context.cookies(page.url) if c["name"] == name]
    return found[0]["value"] if found else None


def whoami(page) -> int:
    """The status of an API request (GET /auth/whoami) with the browser's cookies."""
    origin = "/".join(page.url.split("/", 3)[:3])
    return page.request.get(origin + "/api/v1/auth/whoami").status


def refused(browser, status: int) -> None:
    """The browser reports each refused request as a console error: the ones the test
    expects are not errors of the page."""
    browser.errors[:] = [e for e in browser.errors if f"status of {status}" not in e]


def test_a_browser_that_has_not_logged_in_gets_the_login_page_and_then_the_experiments(
    new_browser, site
):
    user = make_user(site, "lin")
    browser = new_browser()
    page = browser.open("/", "form.login-form")
    assert page.url == site.master.url + "/login"
    assert page.locator("nav[aria-label=Main]").is_hidden()  # its links need a login
    browser.screenshot("login")
    log_in(page, user, PASSWORD)
    page.wait_for_url(site.master.url + "/")
    page.wait_for_selector("tbody tr[data-key]")
    assert page.locator("tbody tr[data-key]").count() == 3  # everyone's experiments
    assert page.locator("header #account").text_content() == f"Logged in as {user}"
    assert page.get_by_role("button", name="Log out").is_visible()
    assert cookie(page, "shipyard_session") is not None
    refused(browser, 401)  # the experiments page's requests before the login


def test_the_login_page_returns_to_the_page_asked_for_and_only_on_this_site(new_browser, site):
    user = make_user(site, "noor")
    path = f"/experiments/{site.asha['id']}?tab=config"
    browser = new_browser()
    page = browser.open(path, "form.login-form")
    assert page.url == f"{site.master.url}/login?next={quote(path, safe='')}"
    log_in(page, user, PASSWORD)
    page.wait_for_url(site.master.url + path)
    page.wait_for_selector("pre.code-block")
    refused(browser, 401)
    # A link that would lead elsewhere after the login leads to the experiments instead.
    for elsewhere in ("https://example.com/", "//example.com/x", "/\\example.com/x"):
        other = new_browser()
        page = other.open(f"/login?next={quote(elsewhere, safe='')}", "form.login-form")
        log_in(page, user, PASSWORD)
        page.wait_for_url(site.master.url + "/")
        page.wait_for_selector("tbody tr[data-key]")


def test_a_wrong_password_is_said_and_the_browser_stays_on_the_login_page(new_browser, site):
    user = make_user(site, "omar")
    browser = new_browser()
    page = browser.open("/login", "form.login-form")
    log_in(page, user, "not the password")
    alert = page.get_by_role("alert")
    alert.wait_for()
    assert alert.inner_text() == "wrong username or password"
    assert page.url == site.master.url + "/login"
    assert cookie(page, "shipyard_session") is None
    assert whoami(page) == 401
    # The right password then logs in.
    log_in(page, user, PASSWORD)
    page.wait_for_url(site.master.url + "/")
    page.wait_for_selector("tbody tr[data-key]")
    refused(browser, 401)


def test_after_too_many_wrong_passwords_the_page_says_when_to_try_again(new_browser, site):
    user = make_user(site, "pia")
    for _ in range(10):  # the master's limit for one account (services/login.py)
        wrong = {"username": user, "password": "guess", "mode": "cookie"}
        assert site.master.http.post("/auth/login", json=wrong).status_code == 401
    browser = new_browser()
    page = browser.open("/login", "form.login-form")
    log_in(page, user, PASSWORD)  # even the right password, for now
    alert = page.get_by_role("alert")
    alert.wait_for()
    assert re.fullmatch(
        r"too many failed logins for this account; try again in \d+ s", alert.inner_text()
    )
    assert page.url == site.master.url + "/login"
    refused(browser, 429)


def test_log_out_ends_the_session(new_browser, site):
    browser = new_browser()
    page = browser.page
    log_in_with_ticket(page.context, site.master)
    browser.open("/cluster", "#account:not([hidden])")
    assert page.text_content("header #account") == f"Logged in as {site.master.username}"
    session = [c for c in page.context.cookies(page.url) if c["name"] == "shipyard_session"]
    assert whoami(page) == 200
    page.get_by_role("button", name="Log out").click()
    page.wait_for_url(site.master.url + "/login")
    page.wait_for_selector("form.login-form")
    assert cookie(page, "shipyard_session") is None and cookie(page, "shipyard_csrf") is None
    assert whoami(page) == 401
    # The master revoked the session: the old cookie, sent again, is refused too.
    page.context.add_cookies(session)
    assert whoami(page) == 401
    browser.open("/cluster", "form.login-form")
    assert page.url == site.master.url + "/login?next=%2Fcluster"
    refused(browser, 401)


def test_a_used_login_link_says_it_has_expired(new_browser, site):
    r = site.master.http.post("/auth/tickets")
    assert r.status_code == 201, r.text
    link = f"{site.master.url}/login?ticket={r.json()['ticket']}"
    first = new_browser()
    first.page.goto(link)
    first.page.wait_for_url(site.master.url + "/")
    first.page.wait_for_selector("tbody tr[data-key]")  # logged in
    second = new_browser()  # someone who has the link too, e.g. from the terminal's history
    second.page.goto(link)
    second.page.wait_for_url(site.master.url + "/login?expired=1")
    second.page.get_by_text("The login link has expired or was used").wait_for()
    assert second.page.locator("form.login-form").is_visible()
    assert cookie(second.page, "shipyard_session") is None
    assert whoami(second.page) == 401
