"""The web console in a real browser (Debian's Chromium, driven headless by Playwright): against the observed
stack it shows the index with its indexing lag, the picture of its windows, its debt over the last minutes (the
samples planner-api's metrics refresh keeps), both queues with a running, an excluded and a retried job, and a
query's EXPLAIN as a pruning funnel and its rows. A screenshot is kept in
test-artifacts/."""

from __future__ import annotations

import os
import shutil
import time

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
        # A delete no split can hold (split statistics rule every one out): accepted and done at once.
        delete = api.post(f"/v1/indexes/{INDEX}/deletes", json={"where": "host = 'no-such-host'"}).json()
    assert delete["status"] == "succeeded" and delete["progress"]["splits_covered"] == 0, delete
    assert any(w["closed"] for w in windows) and any(not w["closed"] for w in windows)
    assert any(w["marked_for_deletion"] for w in windows) and any(w["live_jobs"] for w in windows)
    samples = _two_debt_samples(observed_stack, keys)
    debt = samples[-1]

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
            assert "retention: none configured" in page.locator("#windows .legend").inner_text()

            # The debt chart: one line per measure through every sample, labelled with the last.
            chart = page.locator(f'.debt-chart[data-samples="{len(samples)}"]')
            chart.wait_for()
            for series in ("splits_waiting", "closed_windows_not_final", "indexing_files_waiting"):
                line = chart.locator(f'g.debt-series[data-series="{series}"]')
                assert len(line.locator("polyline").get_attribute("points").split()) == len(samples), series
                assert line.locator("circle").count() == len(samples)
                assert line.locator(".debt-label").text_content().startswith(f"{debt[series]:,} "), series
            assert f"{debt['splits_waiting']:,} splits waiting" in page.locator(".debt-facts").inner_text()

            shown_delete = page.locator(f'#deletes-table tr[data-delete="{delete["delete_id"]}"]')
            shown_delete.wait_for()
            assert "succeeded" in shown_delete.inner_text() and "0 rows removed" in shown_delete.inner_text()

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

            # The metastore check, on demand: PostgreSQL and the bucket's commit log agree.
            page.click("#verify-metastore")
            page.locator('#metastore [data-agrees]').wait_for(timeout=60_000)
            assert page.locator("#metastore [data-agrees]").get_attribute("data-agrees") == "yes", \
                page.locator("#metastore").inner_text()

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


def _two_debt_samples(observed_stack, keys: Keys) -> list[dict]:
    """planner-api samples its debt at every metrics refresh (10 s), one row per 10 s of its clock: once the
    first sample of the seeded index is in, moving the clock on by one interval makes the next refresh write a
    second one."""
    with httpx.Client(base_url=observed_stack.proxy, headers=Keys.header(keys.admin), timeout=60) as api:
        def samples_once(count: int) -> list[dict]:
            deadline = time.monotonic() + 40
            while True:
                samples = api.get(f"/v1/indexes/{INDEX}/debt/history", params={"minutes": 15}).json()["samples"]
                if len(samples) >= count or time.monotonic() > deadline:
                    return samples
                time.sleep(0.5)

        assert len(samples_once(1)) == 1
        observed_stack.planner_clock.advance(10)
        samples = samples_once(2)
    assert len(samples) == 2, samples
    assert samples[-1]["splits_waiting"] > 0 and samples[-1]["indexing_files_waiting"] >= 0
    return samples
