"""Dashboards as code: every metric the Grafana dashboard and the Prometheus alert rules reference is exported on
/metrics by a running planner-api, indexer-api, query-api or proxy (after some traffic), and both files have the
shape their tools load."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.fixtures.apps import Keys
from tests.observability.conftest import INDEX

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
METRIC = re.compile(r"\bstrata_[a-z0-9_]+")
# The sample names a family of each type exposes besides (or instead of) its own name.
SUFFIXES = {"counter": ("_total", "_created"), "histogram": ("_bucket", "_sum", "_count", "_created"),
            "summary": ("_sum", "_count", "_created"), "gauge": ()}


def _dashboard_expressions() -> list[str]:
    dashboard = json.loads((DEPLOY / "grafana" / "strata.json").read_text())
    assert dashboard["uid"] and dashboard["title"] and dashboard["panels"]
    exprs = []
    for panel in dashboard["panels"]:
        if panel["type"] == "row":
            continue
        assert panel["title"] and panel["gridPos"]["w"] <= 24 and panel["targets"], panel
        assert panel["datasource"]["uid"] == "${datasource}"
        exprs += [target["expr"] for target in panel["targets"]]
    return exprs


def _alert_expressions() -> list[str]:
    rules = yaml.safe_load((DEPLOY / "prometheus" / "strata-alerts.yml").read_text())
    exprs = []
    for group in rules["groups"]:
        for rule in group["rules"]:
            assert rule["alert"].startswith("Strata") and rule["labels"]["severity"] in ("info", "warning", "critical")
            assert rule["annotations"]["summary"] and re.fullmatch(r"\d+[smh]", rule["for"]), rule
            exprs.append(rule["expr"])
    return exprs


def _exported(text: str) -> set[str]:
    names = set()
    for family in text_string_to_metric_families(text):
        names.add(family.name)
        names.update(family.name + suffix for suffix in SUFFIXES.get(family.type, ()))
        names.update(sample.name for sample in family.samples)
    return names


def test_every_metric_the_dashboard_and_the_alerts_use_is_exported(observed_stack, keys: Keys):
    with httpx.Client(timeout=60) as client:
        # Traffic first: a query through the proxy and a refused request, so labelled series exist too.
        query = client.post(f"{observed_stack.proxy}/v1/query", headers=Keys.header(keys.admin),
                            json={"sql": f'SELECT count(*) AS n FROM "{INDEX}" WHERE host = \'host-0001\''})
        assert query.status_code == 200, query.text
        assert client.get(f"{observed_stack.proxy}/v1/indexes").status_code == 401
        exported = set()
        for url in (observed_stack.planner, observed_stack.indexer, observed_stack.query, observed_stack.proxy):
            exported |= _exported(client.get(f"{url}/metrics").text)
    referenced = {name for expr in _dashboard_expressions() + _alert_expressions() for name in METRIC.findall(expr)}
    assert len(referenced) >= 15
    missing = sorted(referenced - exported)
    assert not missing, f"referenced but not exported: {missing}"
    # Each concern of the dashboard is covered.
    for concern in ("strata_compaction_jobs", "strata_indexing_debt_oldest_seconds",
                    "strata_query_phase_seconds_bucket", "strata_query_pruned_total", "strata_proxy_rejections_total"):
        assert concern in referenced
    # Compaction debt: every measure has a panel, and its alert reads the gauges the planner exports.
    for debt in ("strata_compaction_debt_splits", "strata_compaction_debt_bytes",
                 "strata_compaction_debt_oldest_split_age_seconds", "strata_compaction_debt_closed_windows_not_final",
                 "strata_compaction_debt_oldest_closed_window_age_seconds",
                 "strata_compaction_debt_first_merge_delay_seconds_bucket", "strata_compaction_merges_total",
                 "strata_compaction_merged_rows_total", "strata_indexing_debt_files"):
        assert debt in {name for expr in _dashboard_expressions() for name in METRIC.findall(expr)}, debt
    rules = {rule["alert"]: rule for group in yaml.safe_load((DEPLOY / "prometheus" / "strata-alerts.yml").read_text())
             ["groups"] for rule in group["rules"]}
    behind = METRIC.findall(rules["StrataCompactionFallingBehind"]["expr"])
    assert {"strata_compaction_debt_oldest_closed_window_age_seconds", "strata_compaction_debt_splits"} <= set(behind)
