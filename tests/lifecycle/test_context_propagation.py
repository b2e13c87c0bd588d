"""Spans other libraries start during a tool or model call are children of
that call's span; the invocation is a child of the caller's span; the caller's
context is left as it was."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from google.adk.agents import BaseAgent, LlmAgent, ParallelAgent, SequentialAgent
from google.adk.agents.invocation_context import InvocationContext
from google.adk.agents.run_config import RunConfig, StreamingMode
from google.adk.events import Event
from google.adk.models.llm_request import LlmRequest
from google.genai import types
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.trace import StatusCode

from adk_otel.testing.model import ScriptedModel, Step, call, calls, reply, stream

from .agents import lookup, runner_for
from .harness import APP, assert_clean, drive, shape

INV = f"invocation {APP}"
MODEL = "generate_content scripted-model"
http = trace.get_tracer("some.http.client")


def fetch_stock(sku: str) -> dict[str, Any]:
    """A sync tool that calls an instrumented HTTP client."""
    with http.start_as_current_span(f"GET /stock/{sku}"):
        return {"sku": sku, "stock": 3}


async def fetch_price(sku: str) -> dict[str, Any]:
    """An async tool that calls an instrumented HTTP client."""
    with http.start_as_current_span(f"GET /price/{sku}"):
        return {"sku": sku, "price": 10}


def http_calling_model(*script: Step) -> ScriptedModel:
    """A scripted model whose every request goes through an HTTP client."""
    model = ScriptedModel(script=list(script))

    def choose(request: LlmRequest) -> Step:
        turn = sum(1 for c in request.contents if c.role == "model")
        with http.start_as_current_span(f"POST /generate/{turn}"):
            return model.script[min(turn, len(model.script) - 1)]

    model.choose = choose
    return model


def parent(recorder, span: ReadableSpan) -> ReadableSpan:
    found = recorder.parent_of(span)
    assert found is not None, f"{span.name} has no recorded parent"
    return found


async def test_spans_in_tools_are_children_of_the_tool_span(recorder, caplog):
    agent = LlmAgent(
        name="clerk",
        model=ScriptedModel(
            script=[
                call("fetch_stock", {"sku": "A1"}),
                call("fetch_price", {"sku": "A1"}),
                reply("ok"),
            ]
        ),
        tools=[fetch_stock, fetch_price],
    )

    result = await drive(runner_for(agent))

    assert result.error is None
    assert_clean(recorder, caplog.records)
    stock, price = recorder.one("GET /stock/A1"), recorder.one("GET /price/A1")
    assert parent(recorder, stock) is recorder.one("execute_tool fetch_stock")
    assert parent(recorder, price) is recorder.one("execute_tool fetch_price")
    assert stock.instrumentation_scope.name == "some.http.client"
    assert {s.context.trace_id for s in recorder.ended} == {recorder.one(INV).context.trace_id}


async def test_concurrent_tool_calls_each_get_their_own_children(recorder, caplog):
    both = calls(("fetch_price", {"sku": "A1"}), ("fetch_price", {"sku": "B2"}))
    agent = LlmAgent(
        name="clerk", model=ScriptedModel(script=[both, reply("ok")]), tools=[fetch_price]
    )

    result = await drive(runner_for(agent))

    assert result.error is None
    assert_clean(recorder, caplog.records)
    tools = recorder.named("execute_tool fetch_price")
    assert len(tools) == 2
    for sku in ("A1", "B2"):
        tool = parent(recorder, recorder.one(f"GET /price/{sku}"))
        assert tool in tools
        call_id = tool.attributes["gen_ai.tool.call.id"]
        (function_call,) = [fc for fc in result.events[0].get_function_calls() if fc.id == call_id]
        assert function_call.args == {"sku": sku}


async def test_spans_in_the_model_are_children_of_the_model_span(recorder, caplog):
    model = http_calling_model(call("lookup", {"sku": "A1"}), reply("3 left"))
    agent = LlmAgent(name="clerk", model=model, tools=[lookup])

    result = await drive(runner_for(agent))

    assert result.error is None
    assert_clean(recorder, caplog.records)
    first, second = sorted(recorder.named(MODEL), key=lambda s: s.start_time)
    assert parent(recorder, recorder.one("POST /generate/0")) is first
    assert parent(recorder, recorder.one("POST /generate/1")) is second


async def test_spans_in_a_streaming_model_call(recorder, caplog):
    model = http_calling_model(stream("3 ", "left"))
    agent = LlmAgent(name="clerk", model=model, tools=[lookup])

    result = await drive(runner_for(agent), run_config=RunConfig(streaming_mode=StreamingMode.SSE))

    assert result.error is None
    assert [e.partial for e in result.events] == [True, True, None]
    assert_clean(recorder, caplog.records)
    model_span = recorder.one(MODEL)
    assert parent(recorder, recorder.one("POST /generate/0")) is model_span
    assert model_span.attributes["adk.model.chunks"] == 2


async def test_invocation_is_a_child_of_the_caller_span(recorder, caplog):
    """The caller's span comes from the application's own provider (not
    recorded here), so it can stay open while the invariants are checked."""
    application = TracerProvider().get_tracer("the.application")
    agent = LlmAgent(
        name="clerk",
        model=http_calling_model(call("fetch_stock", {"sku": "A1"}), reply("ok")),
        tools=[fetch_stock],
    )
    runner = runner_for(agent)

    with application.start_as_current_span("caller") as caller:
        result = await drive(runner)
        assert_clean(recorder, caplog.records, caller=caller)

    assert result.error is None
    caller_context = caller.get_span_context()
    invocation = recorder.one(INV)
    assert invocation.parent.span_id == caller_context.span_id
    assert {s.context.trace_id for s in recorder.ended} == {caller_context.trace_id}
    assert shape(recorder) == [
        (0, INV, "OK", "ok"),
        (1, "invoke_agent clerk", "OK", "ok"),
        (2, MODEL, "OK", "ok"),
        (2, "execute_tool fetch_stock", "OK", "ok"),
        (2, MODEL, "OK", "ok"),
    ]
    assert parent(recorder, recorder.one("GET /stock/A1")) is recorder.one(
        "execute_tool fetch_stock"
    )


async def test_two_runs_in_one_recorded_caller_span(recorder, caplog):
    """A caller span on the same (global) provider: one trace, both runs under it."""
    tracer = trace.get_tracer("the.application")
    runner = runner_for(
        LlmAgent(name="clerk", model=ScriptedModel(script=[reply("ok")]), tools=[lookup])
    )

    with tracer.start_as_current_span("caller") as caller:
        first = await drive(runner)
        assert trace.get_current_span() is caller
        second = await drive(runner, session_id=first.session_id)
        assert trace.get_current_span() is caller

    assert first.error is None and second.error is None
    assert_clean(recorder, caplog.records)
    caller_span = recorder.one("caller")
    runs = recorder.named(INV)
    assert len(runs) == 2
    assert [parent(recorder, run) for run in runs] == [caller_span, caller_span]
    assert {s.context.trace_id for s in recorder.ended} == {caller_span.context.trace_id}


class CallingAgent(BaseAgent):
    """A custom agent whose own body calls an instrumented client (as
    ``RemoteA2aAgent`` does with its A2A client), then answers or fails."""

    fail: bool = False

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        with http.start_as_current_span(f"GET /{self.name}"):
            if self.fail:
                raise RuntimeError(f"{self.name} failed")
        yield Event(
            author=self.name,
            invocation_id=ctx.invocation_id,
            content=types.ModelContent(f"{self.name} done"),
        )


async def test_spans_in_an_agents_own_body_are_children_of_the_agent_span(recorder, caplog):
    root = SequentialAgent(
        name="pipeline",
        sub_agents=[
            CallingAgent(name="first"),
            ParallelAgent(
                name="fan", sub_agents=[CallingAgent(name="left"), CallingAgent(name="right")]
            ),
        ],
    )

    result = await drive(runner_for(root))

    assert result.error is None
    assert_clean(recorder, caplog.records)
    for name in ("first", "left", "right"):
        assert parent(recorder, recorder.one(f"GET /{name}")) is recorder.one(
            f"invoke_agent {name}"
        )
    assert trace.get_current_span() is trace.INVALID_SPAN, "nothing left current"


async def test_a_failing_agent_body_leaves_nothing_current(recorder, caplog):
    root = SequentialAgent(
        name="pipeline", sub_agents=[CallingAgent(name="first", fail=True), CallingAgent(name="x")]
    )

    result = await drive(runner_for(root))

    assert isinstance(result.error, RuntimeError)
    assert_clean(recorder, caplog.records)
    failed = recorder.one("invoke_agent first")
    assert failed.status.status_code is StatusCode.ERROR
    assert parent(recorder, recorder.one("GET /first")) is failed
    assert trace.get_current_span() is trace.INVALID_SPAN
