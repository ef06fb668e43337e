"""The web console in a real browser (Debian's Chromium, driven headless by Playwright): against the observed
stack it shows the index with its indexing lag, the picture of its windows, both queues with a running, an
excluded and a retried job, and a query's EXPLAIN as a pruning funnel and its rows. A screenshot is kept in
test-artifacts/."""

from __future__ import annotations

import os
import shutil

import httpx
import pytest

from tests.fixtures.apps import Keys
from tests.observability.conftest import INDEX

# What a headless Chromium needs on these machines: no sandbox as root, and none of its calls home, which a
# closed network refuses.
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def chromium() -> str | None:
    return os.environ.get("STRATA_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


pytestmark = pytest.mark.skipif(chromium() is None, reason="no chromium binary on PATH: `apt-get install chromium` "
                                                          "(make test installs it where apt-get is available)")
SQL = f"SELECT host, count(*) AS n FROM \"{INDEX}\" WHERE host = 'host-0042' GROUP BY host"


def test_console_shows_the_store_the_queues_and_a_pruning_funnel(observed_stack, keys: Keys, artifacts_dir):
    from playwright.sync_api import sync_playwright

    proxy = observed_stack.proxy
    with httpx.Client(base_url=proxy, headers=Keys.header(keys.admin), timeout=60) as api:
        windows = api.get(f"/v1/indexes/{INDEX}/windows", params={"limit": 48}).json()["windows"]
        plan = api.post("/v1/query/explain", json={"sql": SQL}).json()
    assert any(w["closed"] for w in windows) and any(not w["closed"] for w in windows)
    assert any(w["marked_for_deletion"] for w in windows) and any(w["live_jobs"] for w in windows)

    problems: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium(), args=CHROMIUM_FLAGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
            page.on("console", lambda m: problems.append(f"console: {m.text}") if m.type == "error" else None)
            page.goto(f"{proxy}/ui/#key={keys.admin}")

            row = page.locator(f'#index-table tr[data-index="{INDEX}"]')
            row.wait_for()
            assert "files waiting" in row.inner_text(), "the index's indexing lag"
            assert "#key=" not in page.url, "the key leaves the address bar"

            page.locator(".windows-chart g.window").first.wait_for()
            bars = page.locator(".windows-chart g.window")
            assert bars.count() == len(windows)
            starts = {int(bars.nth(i).get_attribute("data-window-start")) for i in range(bars.count())}
            assert starts == {w["window_start"] for w in windows}
            assert "retention: none configured" in page.locator(".legend").inner_text()

            compaction = page.locator("#compaction")
            compaction.locator(f'tr[data-job-id="{observed_stack.running_job}"]').wait_for()
            assert "merging" in compaction.locator(f'tr[data-job-id="{observed_stack.running_job}"]').inner_text()
            assert compaction.locator('.chip[data-status="excluded"] b').inner_text() == "1"
            assert compaction.locator('.chip[data-status="success"] b').inner_text() == "1"
            excluded = compaction.locator(f'tr[data-job-id="{observed_stack.excluded_job}"]')
            assert "storage refused the write" in excluded.inner_text()
            excluded.locator("summary").click()
            assert "observed-worker" in excluded.locator(".failure-log").inner_text()
            indexing = page.locator("#indexing")
            indexing.locator(f'tr[data-job-id="{observed_stack.running_indexing_job}"]').wait_for()
            assert "object store timed out" in indexing.locator(
                f'tr[data-job-id="{observed_stack.retried_indexing_job}"]').inner_text()

            page.fill("#sql", SQL)
            page.click('button[data-action="explain"]')
            page.locator(".funnel").wait_for()
            shown = [s.get_attribute("data-stage") for s in page.locator(".funnel .stage").all()]
            assert shown == ["published", *[s["stage"] for s in plan["stages"]]]
            assert f"{plan['total_files']} files" in page.locator("#explain .plan-facts").inner_text()

            page.click("#run-query")
            page.locator("table.result tbody tr").first.wait_for()
            assert "host-0042" in page.locator("table.result").inner_text()
            page.screenshot(path=str(artifacts_dir / "console.png"), full_page=True)
        finally:
            browser.close()
    assert not problems, problems
