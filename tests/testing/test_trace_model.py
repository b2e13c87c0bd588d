"""SpanRecord constructors and the forest builder, on spans from a real SDK provider."""

from __future__ import annotations

import dataclasses
import re

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from adk_otel import semconv as sc
from adk_otel.traces.io.model import Forest, SpanRecord, as_records

from .builders import T0, TICK, TraceBuilder, build_shop

HEX32 = re.compile(r"[0-9a-f]{32}")
HEX16 = re.compile(r"[0-9a-f]{16}")


def by_name(records: list[SpanRecord]) -> dict[str, SpanRecord]:
    return {record.name: record for record in records}


def test_from_readable_keeps_ids_kinds_status_and_events() -> None:
    records = by_name([SpanRecord.from_readable(s) for s in build_shop().finished()])
    invocation, agent = records["invocation shop"], records["invoke_agent root"]
    model, tool = records["generate_content scripted-model"], records["execute_tool lookup"]

    assert HEX32.fullmatch(tool.trace_id) and HEX16.fullmatch(tool.span_id)
    assert invocation.parent_id is None
    assert agent.parent_id == invocation.span_id
    assert tool.parent_id == model.parent_id == agent.span_id
    assert (model.kind, model.status_code, model.outcome) == ("CLIENT", "OK", "ok")
    assert (tool.kind, tool.status_code, tool.outcome) == ("INTERNAL", "ERROR", "error")
    assert tool.status_description == "ValueError: no such sku"
    assert tool.error_type == "ValueError"
    assert tool.adk_kind == sc.SpanKind.TOOL
    assert [event.name for event in tool.events] == ["exception"]
    assert tool.events[0].attributes["exception.message"] == "no such sku"
    assert tool.scope == sc.INSTRUMENTATION_SCOPE
    assert tool.resource["telemetry.sdk.language"] == "python"
    assert (tool.start_ns, tool.end_ns) == (T0 + 5 * TICK, T0 + 7 * TICK)
    assert tool.duration_ms == 2.0


def test_live_span_reads_as_unended() -> None:
    builder = TraceBuilder()
    with builder.span(sc.SpanKind.TOOL, "slow", end=False) as span:
        record = SpanRecord.from_readable(span)
    assert record.end_ns is None
    assert not record.ended
    assert record.duration_ms is None
    assert record.outcome is None


def test_error_type_falls_back_to_exception_event() -> None:
    builder = TraceBuilder()
    with builder.span(sc.SpanKind.TOOL, "t", end=False) as span:
        span.record_exception(KeyError("k"))
        span.end()
    (record,) = as_records(builder.finished())
    assert record.error_type == "KeyError"


def test_proto_records_equal_sdk_records() -> None:
    spans = build_shop().finished()
    from_sdk = [SpanRecord.from_readable(span) for span in spans]
    from_proto = SpanRecord.from_request(encode_spans(spans))
    assert sorted(from_proto, key=lambda r: r.span_id) == sorted(from_sdk, key=lambda r: r.span_id)


def test_proto_span_alone_has_no_resource_and_parent_none_for_root() -> None:
    request = encode_spans(build_shop().finished())
    proto_spans = [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]
    records = by_name(as_records(proto_spans))
    assert records["invocation shop"].parent_id is None
    assert records["execute_tool lookup"].resource == {}
    assert records["execute_tool lookup"].scope is None


def test_as_records_mixes_sources_and_rejects_other_objects() -> None:
    spans = build_shop().finished()
    mixed = as_records([spans[0], SpanRecord.from_readable(spans[1]), encode_spans(spans[2:])])
    assert [r.name for r in mixed] == [s.name for s in spans]
    with pytest.raises(TypeError, match="not a span: dict"):
        as_records([{"name": "x"}])


def test_records_hash_by_trace_and_span_id() -> None:
    a, b = as_records(build_shop().finished()[:2])
    renamed = dataclasses.replace(a, name="renamed", attributes={"x": [1]})
    assert hash(renamed) == hash(a)
    assert len({a, b}) == 2


def test_forest_nests_by_parent_and_orders_siblings_by_start() -> None:
    forest = Forest(build_shop().finished())
    (root,) = forest.roots
    assert root.record.name == "invocation shop"
    (agent,) = root.children
    assert [child.record.name for child in agent.children] == [
        "generate_content scripted-model",
        "execute_tool lookup",
    ]
    assert [(node.record.name, depth) for node, depth in forest.walk()][-1] == (
        "execute_tool lookup",
        2,
    )
    assert [r.name for r in forest.ancestors(agent.children[1].record)] == [
        "invoke_agent root",
        "invocation shop",
    ]


def _record(span_id: str, parent: str | None, name: str, start: int = 0) -> SpanRecord:
    return SpanRecord(
        trace_id="t" * 32, span_id=span_id, parent_id=parent, name=name, start_ns=start
    )


def test_same_start_siblings_order_by_name() -> None:
    forest = Forest([_record("r", None, "root"), _record("b", "r", "b"), _record("a", "r", "a")])
    assert [c.record.name for c in forest.roots[0].children] == ["a", "b"]


def test_orphans_become_flagged_roots() -> None:
    forest = Forest([_record("a", None, "root", 1), _record("b", "missing", "lost", 2)])
    assert [(n.record.name, n.orphan) for n in forest.roots] == [("root", False), ("lost", True)]


def test_parent_cycles_are_cut_not_lost() -> None:
    forest = Forest([_record("a", "b", "a", 1), _record("b", "a", "b", 2)])
    assert len(forest.roots) == 1
    assert forest.roots[0].orphan
    assert sorted(n.record.name for n, _ in forest.walk()) == ["a", "b"]


def test_forest_groups_traces_in_root_order() -> None:
    first, second = build_shop().finished(), build_shop().finished()
    forest = Forest([*second, *first])
    assert len(forest.roots) == 2
    assert len(forest.trace_ids()) == 2
    assert len(forest) == 8
