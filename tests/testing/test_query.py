"""SpanQuery filters and its self-explaining assertions."""

from __future__ import annotations

import re

import pytest
from opentelemetry.trace import StatusCode

from adk_otel import semconv as sc
from adk_otel.traces.io.model import SpanRecord
from adk_otel.traces.query import PRESENT, SpanQuery, SpecError

from .builders import TraceBuilder, build_shop

K = sc.SpanKind


@pytest.fixture
def q() -> SpanQuery:
    return SpanQuery(build_shop().finished())


def names(query: SpanQuery) -> list[str]:
    return [record.name for record in query]


def test_layer_filters(q: SpanQuery) -> None:
    assert names(q.invocation()) == ["invocation shop"]
    assert names(q.invocation("shop")) == ["invocation shop"]
    assert names(q.agent("root")) == ["invoke_agent root"]
    assert names(q.model("scripted-model")) == ["generate_content scripted-model"]
    assert names(q.tool("lookup")) == ["execute_tool lookup"]
    assert names(q.tool(re.compile("^look"))) == ["execute_tool lookup"]
    assert names(q.kind(K.TOOL)) == names(q.kind("tool"))
    assert len(q.agent("other")) == 0


def test_results_come_in_tree_order(q: SpanQuery) -> None:
    assert names(q) == [
        "invocation shop",
        "invoke_agent root",
        "generate_content scripted-model",
        "execute_tool lookup",
    ]


def test_status_outcome_error_and_span_kind(q: SpanQuery) -> None:
    assert names(q.status("OK")) == ["generate_content scripted-model"]
    assert names(q.status(StatusCode.OK)) == ["generate_content scripted-model"]
    assert len(q.status("error")) == 3
    assert len(q.outcome(sc.Outcome.ERROR)) == 3
    assert len(q.error("ValueError")) == 3
    assert names(q.error("ValueError: no such sku").tool()) == ["execute_tool lookup"]
    assert names(q.span_kind("client")) == ["generate_content scripted-model"]


def test_name_and_attribute_filters(q: SpanQuery) -> None:
    assert names(q.named("execute_tool lookup")) == ["execute_tool lookup"]
    assert names(q.matching(r"^invo")) == ["invocation shop", "invoke_agent root"]
    assert names(q.attr(sc.GEN_AI_TOOL_NAME)) == ["execute_tool lookup"]
    assert names(q.attr(sc.GEN_AI_USAGE_INPUT_TOKENS, 12)) == ["generate_content scripted-model"]
    assert len(q.attr(sc.GEN_AI_USAGE_INPUT_TOKENS, lambda n: n > 100)) == 0
    assert names(q.attr(sc.GEN_AI_RESPONSE_FINISH_REASONS, ["stop"])) == [
        "generate_content scripted-model"
    ]
    assert len(q.attr("missing", PRESENT)) == 0
    assert len(q.where(lambda r: r.duration_ms == 2.0, "took 2ms")) == 1


def test_ancestry(q: SpanQuery) -> None:
    agent = q.agent("root").one()
    assert names(q.under(q.invocation())) == names(q)[1:]
    assert names(q.children_of(agent)) == [
        "generate_content scripted-model",
        "execute_tool lookup",
    ]
    assert names(q.children_of(q.invocation())) == ["invoke_agent root"]
    assert names(q.tool().under([agent])) == ["execute_tool lookup"]
    assert len(q.under(q.tool())) == 0


def test_chaining_does_not_change_the_original(q: SpanQuery) -> None:
    tools = q.tool()
    assert len(tools.outcome("ok")) == 0
    assert len(tools) == 1
    assert "kind tool" in repr(tools) and "1 of 4 spans" in repr(tools)


def test_one_with_none_found_shows_the_tree(q: SpanQuery) -> None:
    with pytest.raises(
        AssertionError, match=r"expected exactly 1 span where kind tool, tool 'x'; found 0"
    ) as e:
        q.tool("x").one()
    message = str(e.value)
    assert "actual trace (4 spans):" in message
    assert "└─ execute_tool lookup  ERROR error 2.0ms  [ValueError: no such sku]" in message


def test_one_with_many_found_lists_them(q: SpanQuery) -> None:
    with pytest.raises(AssertionError) as e:
        q.status("ERROR").one()
    message = str(e.value)
    assert message.startswith("expected exactly 1 span where status ERROR; found 3")
    assert "  - invocation shop > invoke_agent root > execute_tool lookup  (ERROR error" in message


def test_count_exists_none_first(q: SpanQuery) -> None:
    assert q.kind("model").count(1).exists() is not None
    assert q.first().name == "invocation shop"
    q.tool("delete_everything").none()
    with pytest.raises(AssertionError, match=r"expected 2 span\(s\) where kind model; found 1"):
        q.kind("model").count(2)
    with pytest.raises(AssertionError, match=r"expected at least 1 span where outcome cancelled"):
        q.outcome("cancelled").exists()
    with pytest.raises(AssertionError, match=r"expected at least 1 span where outcome cancelled"):
        q.outcome("cancelled").first()
    with pytest.raises(AssertionError, match=r"expected no span where status ERROR; found 3"):
        q.status("ERROR").none()


def test_unended_spans_are_found() -> None:
    builder = TraceBuilder()
    with builder.span(K.AGENT, "root", end=False) as span:
        record = SpanRecord.from_readable(span)
    query = SpanQuery([record])
    assert names(query.unended()) == ["invoke_agent root"]


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda q: q.kind("tools"),
            "kind must be one of invocation, agent, model, tool, node; got 'tools'",
        ),
        (lambda q: q.status("FAILED"), "status must be one of UNSET, OK, ERROR; got 'FAILED'"),
        (lambda q: q.outcome("failed"), "outcome must be one of ok, error, cancelled, incomplete"),
        (lambda q: q.span_kind("remote"), "span_kind must be one of INTERNAL, SERVER"),
    ],
)
def test_typos_fail_loudly(q: SpanQuery, build, message: str) -> None:
    with pytest.raises(SpecError, match=re.escape(message)):
        build(q)
