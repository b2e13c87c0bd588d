"""The readable tree and the normalised snapshot form."""

from __future__ import annotations

from adk_otel import semconv as sc
from adk_otel.traces.io.model import SpanRecord, as_records
from adk_otel.traces.render import render_normalized, render_tree

from .builders import TraceBuilder, build_shop

K = sc.SpanKind


def test_tree_shows_status_outcome_duration_and_errors_once() -> None:
    assert render_tree(build_shop().finished()) == (
        "invocation shop  ERROR error 10.0ms  [ValueError]\n"
        "└─ invoke_agent root  ERROR error 7.0ms  [ValueError]\n"
        "   ├─ generate_content scripted-model  OK ok 1.0ms\n"
        "   └─ execute_tool lookup  ERROR error 2.0ms  [ValueError: no such sku]"
    )


def test_unended_spans_are_marked() -> None:
    b = TraceBuilder()
    with b.span(K.AGENT, "root"), b.span(K.TOOL, "slow", end=False) as slow:
        open_record = SpanRecord.from_readable(slow)
    tree = render_tree([*as_records(b.finished()), open_record])
    assert tree == "invoke_agent root  OK ok 2.0ms\n└─ execute_tool slow  UNSET !! NOT ENDED"


def test_orphans_and_several_traces_are_labelled() -> None:
    first, second = build_shop().finished(), build_shop(tool_error=False).finished()
    orphan = next(s for s in second if s.name == "invoke_agent root")
    records = as_records([*first, orphan])
    tree = render_tree(records)
    trace_ids = {r.trace_id for r in records}
    assert tree.count("trace ") == 2
    assert all(f"trace {trace_id}" in tree for trace_id in trace_ids)
    assert f"invoke_agent root  OK ok 5.0ms  (orphan: parent {orphan.parent.span_id:016x}" in tree


def test_colour_is_off_by_default() -> None:
    spans = build_shop().finished()
    assert "\x1b[" not in render_tree(spans)
    coloured = render_tree(spans, color=True)
    assert "\x1b[31mERROR error\x1b[0m" in coloured
    assert "\x1b[32mOK ok\x1b[0m" in coloured


def test_empty_input() -> None:
    assert render_tree([]) == "(no spans)"
    assert render_normalized([]) == "(no spans)\n"


def test_normalized_form_is_stable_across_runs() -> None:
    attrs = {sc.ADK_INVOCATION_ID: "e-1", "http.url": "https://example.test"}
    first = TraceBuilder()
    second = TraceBuilder()
    second.now += 123_456_789  # other times, other ids
    for b in (first, second):
        with b.span(K.INVOCATION, "shop", attributes=attrs):
            pass
    text = render_normalized(first.finished())
    assert text == render_normalized(second.finished())
    assert text == (
        "invocation shop  INTERNAL OK ok\n"
        '     adk.app.name = "shop"\n'
        "     adk.invocation.id = <masked>\n"
        '     adk.outcome = "ok"\n'
        '     adk.span.kind = "invocation"\n'
    )


def test_normalized_tree_keeps_errors_events_and_allowed_attributes() -> None:
    text = render_normalized(build_shop().finished())
    records = as_records(build_shop().finished())
    assert not any(r.span_id in text or r.trace_id in text for r in records)
    assert "ms" not in text.replace("stop", "")
    assert text.splitlines()[:3] == [
        "invocation shop  INTERNAL ERROR error  [ValueError: no such sku]",
        '│    adk.app.name = "shop"',
        '│    adk.outcome = "error"',
    ]
    assert "   ├─ generate_content scripted-model  CLIENT OK ok" in text
    assert '   │       gen_ai.response.finish_reasons = ["stop"]' in text
    assert "           event exception ValueError: no such sku" in text


def test_normalized_allow_list_is_configurable() -> None:
    text = render_normalized(
        build_shop().finished(), attributes={sc.GEN_AI_TOOL_NAME}, masked={sc.ADK_SPAN_KIND}
    )
    assert "adk.outcome" not in text
    assert 'gen_ai.tool.name = "lookup"' in text
    assert "adk.span.kind = <masked>" in text
