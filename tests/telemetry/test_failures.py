"""Every failure named: ``adk.error.category`` (and retryable, status code)
on every ERROR span, failures reported as results, roll-ups, the failure
counter, the app's classifier, and transfers that are not failures."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from google.adk.agents import LlmAgent
from google.adk.agents.run_config import RunConfig
from google.adk.runners import InMemoryRunner
from google.genai import types
from opentelemetry import trace
from opentelemetry.trace import StatusCode
from pydantic import BaseModel

import adk_otel
from adk_otel import semconv as sc
from adk_otel.instrumentation import plugin_of
from adk_otel.testing.model import ScriptedModel, call, fail, reply

from .harness import APP, USER, Recorded, providers, run

CATEGORY, RETRYABLE, COUNT, CATEGORIES = (
    sc.ADK_ERROR_CATEGORY,
    sc.ADK_ERROR_RETRYABLE,
    sc.ADK_ERROR_COUNT,
    sc.ADK_ERROR_CATEGORIES,
)


class PaymentDeclined(Exception):
    pass


def lookup(sku: str) -> dict[str, Any]:
    """Stock level for a SKU; raises for 'bad', reports an error for 'gone'."""
    if sku == "bad":
        raise RuntimeError(f"no such sku: {sku}")
    if sku == "gone":
        return {"status": "error", "error_message": f"{sku} was discontinued"}
    if sku == "declined":
        raise PaymentDeclined("card declined")
    return {"status": "success", "stock": 3}


def fetch_price(sku: str) -> dict[str, Any]:
    """Calls a pricing backend that answers 503 (a real httpx error)."""
    request = httpx.Request("GET", f"http://pricing.invalid/{sku}")
    response = httpx.Response(503, request=request, headers={"retry-after": "7"})
    response.raise_for_status()
    return {}


class Order(BaseModel):
    sku: str
    quantity: int


def clerk(*script: Any, tools: list[Any] | None = None) -> LlmAgent:
    return LlmAgent(
        name="clerk",
        model=ScriptedModel(script=list(script)),
        tools=[lookup] if tools is None else tools,
    )


def assert_every_error_named(rec: Recorded) -> None:
    """Every ERROR span has a category; nothing is left open, current or failed."""
    for span in rec.spans:
        if span.status.status_code is StatusCode.ERROR:
            assert span.attributes.get(CATEGORY), span.name
    plugin = plugin_of(rec.runner)
    assert plugin is not None
    assert plugin.open_spans == 0
    assert plugin.internal_errors == 0
    assert not trace.get_current_span().get_span_context().is_valid
    assert len({s.context.span_id for s in rec.spans}) == len(rec.spans)


@pytest.fixture(autouse=True)
def _no_detach_failures(caplog):
    yield
    assert "Failed to detach context" not in caplog.text


async def test_a_tool_that_raises_is_tool_exception_on_every_layer_it_fails() -> None:
    rec = await run(clerk(call("lookup", {"sku": "bad"})))
    assert isinstance(rec.error, RuntimeError)
    assert_every_error_named(rec)
    tool = rec.one("execute_tool lookup")
    agent = rec.one("invoke_agent clerk")
    run_span = rec.one(f"invocation {APP}")
    for span in (tool, agent, run_span):
        assert span.status.status_code is StatusCode.ERROR
        assert span.attributes[CATEGORY] == "tool_exception"
        assert span.attributes[sc.ERROR_TYPE] == "RuntimeError"
    assert RETRYABLE not in tool.attributes
    assert agent.attributes[COUNT] == 1
    assert run_span.attributes[COUNT] == 2  # the tool and the agent
    assert run_span.attributes[CATEGORIES] == ("tool_exception",)


async def test_a_tool_error_result_is_a_soft_failure_and_the_run_recovers() -> None:
    rec = await run(clerk(call("lookup", {"sku": "gone"}), reply("sorry, discontinued")))
    assert_every_error_named(rec)
    assert rec.error is None
    tool = rec.one("execute_tool lookup")
    assert tool.status.status_code is StatusCode.ERROR
    assert tool.status.description == "gone was discontinued"
    assert tool.attributes[CATEGORY] == "tool_reported_error"
    assert tool.attributes[sc.ADK_OUTCOME] == "error"
    assert [e.name for e in tool.events if e.name == "exception"] == []
    for name in ("invoke_agent clerk", f"invocation {APP}"):
        span = rec.one(name)
        assert span.status.status_code is StatusCode.OK
        assert span.attributes[COUNT] == 1
        assert span.attributes[CATEGORIES] == ("tool_reported_error",)


async def test_a_successful_run_has_zero_failures() -> None:
    rec = await run(clerk(call("lookup", {"sku": "A1"}), reply("3 left")))
    assert rec.error is None
    assert rec.one("execute_tool lookup").status.status_code is StatusCode.OK
    for name in ("invoke_agent clerk", f"invocation {APP}"):
        assert rec.one(name).attributes[COUNT] == 0
        assert rec.one(name).attributes[CATEGORIES] == ()
    assert not rec.points(sc.METRIC_FAILURE_COUNT)


@pytest.mark.parametrize("off", ["keyword", "env"])
async def test_result_detection_can_be_switched_off(off, monkeypatch) -> None:
    options: dict[str, Any] = {}
    if off == "keyword":
        options["result_failures"] = False
    else:
        monkeypatch.setenv("ADK_OTEL_RESULT_FAILURES", "false")
    rec = await run(clerk(call("lookup", {"sku": "gone"}), reply("ok")), **options)
    assert rec.one("execute_tool lookup").status.status_code is StatusCode.OK
    assert rec.one(f"invocation {APP}").attributes[COUNT] == 0


async def test_a_missing_mandatory_argument_is_tool_invalid_args() -> None:
    rec = await run(clerk(call("lookup", {}), reply("which sku?")))
    assert_every_error_named(rec)
    assert rec.error is None
    tool = rec.one("execute_tool lookup")
    assert tool.status.status_code is StatusCode.ERROR
    assert tool.attributes[CATEGORY] == "tool_invalid_args"
    assert tool.attributes[RETRYABLE] is False
    assert "mandatory input parameters" in (tool.status.description or "")
    assert rec.one("invoke_agent clerk").status.status_code is StatusCode.OK


def place(sku: str, quantity: int) -> dict[str, Any]:
    """Places an order."""
    return {"placed": quantity}


def place_order(order: dict[str, Any]) -> dict[str, Any]:
    """Places an order, validating it with pydantic."""
    return {"placed": Order.model_validate(order).quantity}


async def test_adks_argument_validation_is_tool_invalid_args(monkeypatch) -> None:
    import google.adk.tools.function_tool as function_tool

    validates = hasattr(function_tool.FunctionTool, "_build_validation_error_response")
    monkeypatch.setenv("ADK_ENABLE_FUNCTION_TOOL_ARG_VALIDATION", "1")
    rec = await run(
        clerk(call("place", {"sku": "A1", "quantity": "many"}), reply("?"), tools=[place])
    )
    assert rec.error is None
    tool = rec.one("execute_tool place")
    if not validates:
        # This ADK release (2.5) passes the argument through unchecked.
        assert tool.status.status_code is StatusCode.OK
        return
    assert tool.status.status_code is StatusCode.ERROR
    assert tool.attributes[CATEGORY] == "tool_invalid_args"
    assert "argument validation errors" in (tool.status.description or "")


async def test_a_pydantic_validation_error_in_a_tool_is_tool_invalid_args() -> None:
    rec = await run(clerk(call("place_order", {"order": {"sku": "A1"}}), tools=[place_order]))
    assert type(rec.error).__name__ == "ValidationError"
    assert rec.one("execute_tool place_order").attributes[CATEGORY] == "tool_invalid_args"


async def test_a_made_up_tool_name_is_tool_not_found() -> None:
    rec = await run(clerk(call("teleport", {"to": "moon"}), reply("sorry")))
    assert_every_error_named(rec)
    if rec.error is None:
        # ADK 2.13: the tool's error hook fires, then ADK answers the model.
        tool = rec.one("execute_tool teleport")
        assert tool.attributes[CATEGORY] == "tool_not_found"
        assert tool.attributes[RETRYABLE] is False
        assert rec.one(f"invocation {APP}").attributes[CATEGORIES] == ("tool_not_found",)
        assert rec.one(f"invocation {APP}").status.status_code is StatusCode.OK
    else:
        # ADK 2.5: no tool hook at all; the agent and the run fail.
        assert isinstance(rec.error, ValueError)
        for name in ("invoke_agent clerk", f"invocation {APP}"):
            assert rec.one(name).attributes[CATEGORY] == "tool_not_found"


async def test_an_http_error_in_a_tool_carries_its_status_code() -> None:
    rec = await run(clerk(call("fetch_price", {"sku": "A1"}), tools=[fetch_price]))
    assert_every_error_named(rec)
    assert isinstance(rec.error, httpx.HTTPStatusError)
    tool = rec.one("execute_tool fetch_price")
    assert tool.attributes[CATEGORY] == "tool_exception"
    assert tool.attributes[sc.HTTP_RESPONSE_STATUS_CODE] == 503
    assert tool.attributes[RETRYABLE] is True
    assert tool.attributes[sc.ADK_ERROR_RETRY_AFTER] == 7.0


async def test_the_llm_call_limit_is_limit_exceeded() -> None:
    tracer_provider, exporter, meter_provider, _reader = providers()
    agent = clerk(call("lookup", {"sku": "A1"}), call("lookup", {"sku": "A2"}), reply("done"))
    runner = adk_otel.instrument(
        InMemoryRunner(agent=agent, app_name=APP),
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
    )
    session = await runner.session_service.create_session(app_name=APP, user_id=USER)
    with pytest.raises(Exception) as raised:
        async for _ in runner.run_async(
            user_id=USER,
            session_id=session.id,
            new_message=types.UserContent("stock?"),
            run_config=RunConfig(max_llm_calls=1),
        ):
            pass
    assert type(raised.value).__name__ == "LlmCallsLimitExceededError"
    spans = {s.name: s for s in exporter.get_finished_spans()}
    for name in ("invoke_agent clerk", f"invocation {APP}"):
        assert spans[name].attributes[CATEGORY] == "limit_exceeded"
        assert spans[name].attributes[RETRYABLE] is False


async def test_a_model_that_raises_something_unknown_is_other() -> None:
    rec = await run(clerk(fail(KeyError("boom"))))
    assert isinstance(rec.error, KeyError)
    assert_every_error_named(rec)
    assert rec.one("generate_content scripted-model").attributes[CATEGORY] == "other"


async def test_a_blocked_response_is_content_blocked() -> None:
    # As ADK builds it from a candidate the provider blocked (LlmResponse.create).
    blocked = reply(
        "",
        finish_reason=types.FinishReason.SAFETY,
        extra={"error_code": "SAFETY", "error_message": "blocked for safety"},
    )
    rec = await run(clerk(blocked))
    assert_every_error_named(rec)
    model = rec.one("generate_content scripted-model")
    assert model.status.status_code is StatusCode.ERROR
    assert model.attributes[CATEGORY] == "content_blocked"
    assert model.attributes[RETRYABLE] is False


async def test_the_failure_counter() -> None:
    rec = await run(clerk(call("lookup", {"sku": "gone"}), call("lookup", {"sku": "bad"})))
    point = rec.point(
        sc.METRIC_FAILURE_COUNT, {sc.ADK_SPAN_KIND: "tool", CATEGORY: "tool_reported_error"}
    )
    assert point.value == 1
    assert point.attributes[sc.GEN_AI_TOOL_NAME] == "lookup"
    assert point.attributes[sc.ERROR_TYPE] == "tool_error"
    raised = rec.point(
        sc.METRIC_FAILURE_COUNT, {sc.ADK_SPAN_KIND: "tool", CATEGORY: "tool_exception"}
    )
    assert raised.attributes[sc.ERROR_TYPE] == "RuntimeError"
    agent = rec.point(sc.METRIC_FAILURE_COUNT, {sc.ADK_SPAN_KIND: "agent"})
    assert agent.attributes[sc.GEN_AI_AGENT_NAME] == "clerk"
    rec.point(sc.METRIC_FAILURE_COUNT, {sc.ADK_SPAN_KIND: "invocation"})


async def test_an_app_classifier_names_its_own_failures() -> None:
    def classify(subject: object, layer: str) -> str | None:
        if isinstance(subject, PaymentDeclined):
            return "payment_declined"
        if isinstance(subject, dict) and subject.get("stock") == 0:
            return "out_of_stock"
        return None

    def empty(sku: str) -> dict[str, Any]:
        """Always out of stock."""
        return {"stock": 0}

    rec = await run(
        clerk(
            call("empty", {"sku": "A1"}),
            call("lookup", {"sku": "declined"}),
            tools=[lookup, empty],
        ),
        error_classifier=classify,
    )
    assert_every_error_named(rec)
    assert isinstance(rec.error, PaymentDeclined)
    empty_span = rec.one("execute_tool empty")
    assert empty_span.status.status_code is StatusCode.ERROR
    assert empty_span.attributes[CATEGORY] == "out_of_stock"
    assert RETRYABLE not in empty_span.attributes
    for name in ("execute_tool lookup", "invoke_agent clerk", f"invocation {APP}"):
        assert rec.one(name).attributes[CATEGORY] == "payment_declined"
    assert rec.one(f"invocation {APP}").attributes[CATEGORIES] == (
        "out_of_stock",
        "payment_declined",
    )


class _Hostile(str):
    def __str__(self) -> str:
        raise RuntimeError("no")


@pytest.mark.parametrize(
    "answer",
    [RuntimeError("classifier bug"), 42, "", _Hostile("x"), ["tool_exception"]],
    ids=["raises", "int", "empty", "hostile-str", "list"],
)
async def test_a_broken_classifier_never_breaks_a_run(answer, caplog) -> None:
    def classify(subject: object, layer: str) -> Any:
        if isinstance(answer, Exception):
            raise answer
        return answer

    rec = await run(
        clerk(call("lookup", {"sku": "bad"}), reply("x")),
        error_classifier=classify,
    )
    assert isinstance(rec.error, RuntimeError) and str(rec.error) == "no such sku: bad"
    assert_every_error_named(rec)
    assert rec.one("execute_tool lookup").attributes[CATEGORY] == "tool_exception"
    assert all(s.end_time for s in rec.spans)


async def test_a_classifier_with_the_wrong_signature_is_logged_once_with_its_error(
    caplog, monkeypatch
) -> None:
    import logging

    from adk_otel.reading import failures

    monkeypatch.setattr(failures, "_reported", set())

    def classify(subject: object) -> str | None:  # the layer argument forgotten
        return None

    caplog.set_level(logging.WARNING, logger="adk_otel")
    rec = await run(
        clerk(call("lookup", {"sku": "bad"}), reply("x")),
        error_classifier=classify,  # type: ignore[arg-type]
    )
    assert rec.one("execute_tool lookup").attributes[CATEGORY] == "tool_exception"
    [warning] = [r for r in caplog.records if "error_classifier" in r.getMessage()]
    message = warning.getMessage()
    assert "raised TypeError: " in message and "positional argument" in message
    assert "error_classifier(subject, layer) -> str | None" in message
    assert warning.exc_info is not None


# -- transfers are not failures ------------------------------------------------------


def _transfer_app(route: list[tuple[str, str]]) -> LlmAgent:
    """router (sub-agents billing and support); each agent's script transfers
    along ``route`` ((from, to) pairs, in order), then replies."""
    scripts: dict[str, list[Any]] = {"router": [], "billing": [], "support": []}
    for source, target in route:
        scripts[source].append(call("transfer_to_agent", {"agent_name": target}))
    last = route[-1][1]
    scripts[last].append(reply("done"))

    def agent(name: str, **kw: Any) -> LlmAgent:
        return LlmAgent(
            name=name,
            description=f"{name} desk",
            model=ScriptedModel(script=scripts[name] or [reply("idle")]),
            **kw,
        )

    return agent("router", sub_agents=[agent("billing"), agent("support")])


@pytest.mark.parametrize(
    "route",
    [
        [("router", "billing")],
        [("router", "billing"), ("billing", "router")],
        [("router", "billing"), ("billing", "support")],
    ],
    ids=["to-sub-agent", "to-parent", "to-peer"],
)
async def test_a_transfer_source_ends_ok_naming_its_target(route) -> None:
    rec = await run(_transfer_app(route))
    assert_every_error_named(rec)
    assert rec.error is None
    agents = sorted(rec.kind("agent"), key=lambda s: s.start_time or 0)
    sources = agents[: len(route)]
    for span, (source, target) in zip(sources, route, strict=True):
        assert span.name == f"invoke_agent {source}"
        assert span.status.status_code is StatusCode.OK
        assert span.attributes[sc.ADK_OUTCOME] == "ok"
        assert span.attributes[sc.ADK_CLOSE_REASON] == "transferred"
        assert span.attributes[sc.ADK_TRANSFER_TARGET] == target
    final = agents[len(route)]
    assert final.name == f"invoke_agent {route[-1][1]}"
    assert final.attributes[sc.ADK_OUTCOME] == "ok"
    assert not [s for s in rec.spans if s.attributes.get(sc.ADK_OUTCOME) == "incomplete"]
