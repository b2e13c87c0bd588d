"""One trace across an MCP tool call: an agent whose ``stock`` tool is served
by a real MCP server process (the ``mcp`` package, streamable HTTP), each
process exporting over OTLP to one receiver. ADK puts the current context into
the call's ``_meta``; adk-otel's ``execute_tool`` span is current then, so the
server's spans continue it."""

from __future__ import annotations

from adk_otel import semconv as sc

from .conftest import Call, run_process
from .test_a2a import chain_to, service_of


def stock_call(receiver, mcp_url: str, sku: str) -> Call:
    call = run_process(receiver, ["mcp_caller.py", mcp_url, sku], "stock query")
    assert call.report["error"] is None
    assert call.report["open_spans"] == 0
    assert call.report["internal_errors"] == 0
    assert call.report["current_span_left"] is False
    assert "Failed to detach context" not in call.stderr
    return call


def assert_one_trace_through_the_tool(call: Call) -> list:
    (query,) = [s for s in call.spans if s.name == "stock query"]
    chain = chain_to(query, call.spans)
    names = [(s.name, service_of(s)) for s in chain]
    assert names[:3] == [
        ("invocation shop", "shop"),
        ("invoke_agent clerk", "shop"),
        ("execute_tool stock", "shop"),
    ]
    served = [s for s in chain if service_of(s) == "stock-service"]
    assert served[0].kind == "SERVER" and served[0].name == "tools/call stock"
    assert len({s.trace_id for s in chain}) == 1
    # Every span of the calling process is in the run's tree; the MCP server's
    # only other roots are the notifications the mcp package sends without _meta.
    roots = [s for s in call.spans if s.parent_id is None]
    assert [r.name for r in roots if service_of(r) == "shop"] == ["invocation shop"]
    assert all(r.name.startswith("notifications/") for r in roots if r is not chain[0])
    ids = [s.span_id for s in call.spans]
    assert len(ids) == len(set(ids))
    return chain


def test_an_mcp_tool_call_continues_the_trace(receiver, mcp_url) -> None:
    chain = assert_one_trace_through_the_tool(stock_call(receiver, mcp_url, "A1"))
    assert all(s.status_code != "ERROR" for s in chain)


def test_an_mcp_tool_error_is_an_error_on_both_sides(receiver, mcp_url) -> None:
    chain = assert_one_trace_through_the_tool(stock_call(receiver, mcp_url, "GONE"))
    tool = next(s for s in chain if s.name == "execute_tool stock")
    assert tool.status_code == "ERROR"
    assert tool.attributes[sc.ERROR_TYPE] == sc.MCP_TOOL_ERROR
    assert chain[-1].status_code == "ERROR", "the server's own span of the failure"
