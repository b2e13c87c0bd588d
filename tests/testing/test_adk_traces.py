"""The testing API on real ADK runs: InMemoryRunner, LlmAgent, ScriptedModel."""

from __future__ import annotations

import re
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.runners import InMemoryRunner
from google.genai import types

from adk_otel.testing import ScriptedModel, TraceCapture, call, calls, reply, unordered

APP = "shop"


class OutOfStock(ValueError):
    pass


def lookup(sku: str) -> dict[str, Any]:
    """Stock level for a SKU."""
    if sku == "bad":
        raise OutOfStock("no such sku")
    return {"sku": sku, "stock": 3}


def price(sku: str) -> dict[str, Any]:
    """Price of a SKU."""
    return {"sku": sku, "price": 9.5}


async def run(adk_trace: TraceCapture, *script: Any) -> list[Any]:
    agent = LlmAgent(name="root", model=ScriptedModel(script=list(script)), tools=[lookup, price])
    runner = adk_trace.instrument(InMemoryRunner(agent=agent, app_name=APP))
    session = await runner.session_service.create_session(app_name=APP, user_id="u1")
    message = types.Content(role="user", parts=[types.Part(text="is A1 in stock?")])
    return [
        event
        async for event in runner.run_async(
            user_id="u1", session_id=session.id, new_message=message
        )
    ]


async def test_failing_tool_trace(adk_trace: TraceCapture) -> None:
    with pytest.raises(OutOfStock):
        await run(adk_trace, call("lookup", {"sku": "bad"}), reply("sorry"))

    q = adk_trace.query()
    tool = q.tool("lookup").under(q.agent("root")).one()
    assert tool.status_code == "ERROR"
    assert tool.error_type.endswith("OutOfStock")
    assert q.model("scripted-model").one().kind == "CLIENT"
    q.outcome("error").count(3)
    adk_trace.assert_tree(
        (
            f"invocation {APP}",
            {"outcome": "error", "error": "OutOfStock"},
            [
                (
                    "invoke_agent root",
                    [
                        ("generate_content scripted-model", {"outcome": "ok"}),
                        ("execute_tool lookup", [], {"error": "OutOfStock: no such sku"}),
                    ],
                )
            ],
        )
    )


async def test_failing_tool_assertion_message(adk_trace: TraceCapture) -> None:
    with pytest.raises(OutOfStock):
        await run(adk_trace, call("lookup", {"sku": "bad"}), reply("sorry"))

    with pytest.raises(AssertionError) as e:
        adk_trace.assert_tree(
            (
                f"invocation {APP}",
                [("invoke_agent root", [..., ("execute_tool lookup", {"outcome": "ok"})])],
            )
        )
    message = str(e.value)
    assert message.startswith(
        "span tree does not match: under invocation shop > invoke_agent root: "
        "'execute_tool lookup' does not match: outcome is 'error', expected 'ok'"
    )
    assert re.search(r"\nactual \(4 spans\):\ninvocation shop  ERROR error [\d.]+ms  \[", message)
    assert re.search(
        r"\n   └─ execute_tool lookup  ERROR error [\d.]+ms  \[OutOfStock: no such sku\]$", message
    )

    with pytest.raises(
        AssertionError, match=r"expected exactly 1 span where kind tool, tool 'price'; found 0"
    ):
        adk_trace.query().tool("price").one()


async def test_successful_run_matches_snapshot(adk_trace: TraceCapture) -> None:
    events = await run(adk_trace, call("lookup", {"sku": "A1"}), reply("3 in stock"))
    assert events[-1].content.parts[0].text == "3 in stock"

    adk_trace.query().status("ERROR").none()
    adk_trace.assert_tree(
        (
            f"invocation {APP}",
            [
                (
                    "invoke_agent root",
                    [
                        "generate_content scripted-model",
                        "execute_tool lookup",
                        "generate_content scripted-model",
                    ],
                )
            ],
        )
    )
    adk_trace.snapshot("lookup_ok")


async def test_parallel_tool_calls(adk_trace: TraceCapture) -> None:
    await run(adk_trace, calls(("price", {"sku": "A1"}), ("lookup", {"sku": "A1"})), reply("ok"))
    adk_trace.assert_tree(
        (
            f"invocation {APP}",
            [
                (
                    "invoke_agent root",
                    [
                        "generate_content scripted-model",
                        unordered("execute_tool lookup", "execute_tool price"),
                        "generate_content scripted-model",
                    ],
                )
            ],
        )
    )
    q = adk_trace.query()
    assert {r.name for r in q.tool().children_of(q.agent("root"))} == {
        "execute_tool lookup",
        "execute_tool price",
    }
