"""MCP tool failures are failures of the tool call, not of the run: a result
marked ``isError`` and a server process that dies mid-call (ADK turns the
``McpError`` into ``{"error": "MCP tool execution failed: ..."}``) end
``execute_tool`` ERROR with a category while the agent carries on."""

from __future__ import annotations

from pathlib import Path

from adk_otel import semconv as sc
from adk_otel.cli.demo_remote import start_listening, stop

from .conftest import otlp_env, run_process
from .test_mcp import stock_call

HERE = Path(__file__).resolve().parent


def test_an_mcp_is_error_result_is_tool_reported_error(receiver, mcp_url) -> None:
    call = stock_call(receiver, mcp_url, "GONE")
    spans = {s.name: s for s in call.spans if service_of_shop(s)}
    tool = spans["execute_tool stock"]
    assert tool.status_code == "ERROR"
    assert tool.attributes[sc.ADK_ERROR_CATEGORY] == "tool_reported_error"
    assert not [e for e in tool.events if e.name == "exception"]
    for name in ("invoke_agent clerk", "invocation shop"):
        assert spans[name].status_code == "OK"
        assert spans[name].attributes[sc.ADK_ERROR_COUNT] == 1
        assert spans[name].attributes[sc.ADK_ERROR_CATEGORIES] == ("tool_reported_error",)


def service_of_shop(span) -> bool:
    return span.resource.get("service.name") == "shop"


def test_an_mcp_server_dying_mid_call_is_a_tool_failure(receiver, tmp_path) -> None:
    with (tmp_path / "stderr.log").open("w") as log:
        process, port = start_listening(
            [str(HERE / "mcp_server.py")], otlp_env(receiver, "stock-service"), log
        )
    try:
        argv = ["mcp_caller.py", f"http://127.0.0.1:{port}/mcp", "DIE", "5"]
        call = run_process(receiver, argv, "invocation shop")
    finally:
        stop(process)
    assert call.report["error"] is None
    assert call.report["open_spans"] == 0
    assert "Failed to detach context" not in call.stderr
    spans = {s.name: s for s in call.spans if service_of_shop(s)}
    tool = spans["execute_tool stock"]
    assert tool.status_code == "ERROR"
    assert (tool.status_description or "").startswith("MCP tool execution failed")
    # The mcp client of ADK 2.13 sees the stream break off; the older one (with
    # ADK 2.5) waits for the answer until the read timeout.
    assert tool.attributes[sc.ADK_ERROR_CATEGORY] in ("connection", "timeout")
    assert tool.attributes[sc.ADK_ERROR_RETRYABLE] is True
    for name in ("invoke_agent clerk", "invocation shop"):
        assert spans[name].status_code == "OK"
        assert spans[name].attributes[sc.ADK_ERROR_COUNT] == 1
