"""The Grafana dashboard queries only attributes adk-otel actually writes."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from adk_otel import semconv as sc

DASHBOARD = Path(__file__).parents[2] / "collector-config/grafana/dashboards/adk-otel.json"
WRITTEN = {v for k, v in vars(sc).items() if k.isupper() and isinstance(v, str)}
SPAN_KINDS = {k.value for k in sc.SpanKind}
OUTCOMES = {o.value for o in sc.Outcome}


def _targets() -> list[dict[str, Any]]:
    dashboard = json.loads(DASHBOARD.read_text())
    return [t for p in dashboard["panels"] for t in p.get("targets", [])]


def test_dashboard_is_provisionable() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"] == "adk-otel"
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dashboard["panels"]:
        refs = {t["refId"] for t in panel.get("targets", [])}
        for target in panel.get("targets", []):
            assert target["datasource"]["uid"] in ("tempo", "__expr__"), panel["title"]
            for ref in re.findall(r"\$(\w+)", target.get("expression", "")):
                assert ref in refs, f"{panel['title']}: ${ref} is not a query of this panel"


def test_every_traceql_attribute_is_one_adk_otel_writes() -> None:
    queries = [t["query"] for t in _targets() if "query" in t]
    assert len(queries) >= 10
    for query in queries:
        assert query.count("{") == query.count("}") == 1, query
        for name in re.findall(r"\bspan\.([a-z_][\w.]*)", query):
            assert name in WRITTEN, f"{name!r} in {query!r} is not in semconv.py"
        for kind in re.findall(r'span\.adk\.span\.kind = "(\w+)"', query):
            assert kind in SPAN_KINDS, query
        for outcome in re.findall(r'span\.adk\.outcome = "(\w+)"', query):
            assert outcome in OUTCOMES, query


def test_dashboard_covers_errors_latency_and_tokens_per_agent_tool_and_run() -> None:
    queries = " ".join(t.get("query", "") for t in _targets())
    assert "by (span.gen_ai.agent.name" in queries
    assert "by (span.gen_ai.tool.name" in queries
    assert 'span.adk.outcome = "error"' in queries
    assert "quantile_over_time(duration" in queries
    assert f"avg_over_time(span.{sc.ADK_USAGE_INPUT_TOKENS})" in queries
    # Run totals are adk.usage.*; gen_ai.usage.* is read from model-call spans only.
    for target in _targets():
        query = target.get("query", "")
        if "gen_ai.usage." in query:
            assert 'span.adk.span.kind = "model"' in query, query


def test_dashboard_shows_failures_by_category_retryability_and_recovered_runs() -> None:
    queries = [t.get("query", "") for t in _targets()]
    assert any(f"by (span.adk.span.kind, span.{sc.ADK_ERROR_CATEGORY})" in q for q in queries)
    assert any(f"by (span.{sc.ADK_ERROR_RETRYABLE}" in q for q in queries)
    assert any(f"span.{sc.ADK_ERROR_COUNT} > 0" in q and 'outcome = "ok"' in q for q in queries)
