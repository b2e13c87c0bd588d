"""Workflow node spans (ADK 2's graph): one span per node run and attempt.

Every scenario runs a real ``Workflow`` on a real ``InMemoryRunner`` under the
session's global provider, which is adk-otel's (``AdkOtelTracerProvider``),
and checks the tree, each span's status, outcome and node attributes, and
the lifecycle invariants (every span ended once, nothing left current, no
detach errors). The last test runs the same workflows with ADK's native
telemetry alone and checks adk-otel shows every unit ADK shows.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from importlib.metadata import version
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.agents.context import Context
from google.adk.runners import InMemoryRunner
from google.adk.tools import FunctionTool
from google.adk.workflow import FunctionNode, JoinNode, RetryConfig, Workflow
from opentelemetry import trace
from opentelemetry.trace import StatusCode

import adk_otel
from adk_otel.semconv import (
    ADK_ERROR_CATEGORY,
    ADK_ERROR_COUNT,
    ADK_INVOCATION_ID,
    ADK_NODE_ATTEMPT,
    ADK_NODE_KIND,
    ADK_NODE_NAME,
    ADK_NODE_PATH,
    ADK_NODE_ROUTE,
    ADK_SCOPE,
    ERROR_TYPE,
    INSTRUMENTATION_SCOPE,
)
from adk_otel.testing.model import ScriptedModel, reply

from .agents import lookup
from .harness import APP, Recorder, assert_clean, drive, render, shape

ADK_VERSION = tuple(int(part) for part in version("google-adk").split(".")[:2])
TOOL_NODE_HOOKS = ADK_VERSION >= (2, 13)
"""ADK 2.13's tool node runs the tool between the plugin tool hooks: its span is
the tool call's. ADK 2.5's fires no tool hooks: its span stays a node span."""
INV = f"invocation {APP}"
MODEL = "generate_content scripted-model"
NO_DELAY = RetryConfig(max_attempts=3, initial_delay=0, max_delay=0, jitter=0)
user_tracer = trace.get_tracer("the-application")


class NodeFailed(RuntimeError):
    pass


def prepare() -> dict[str, Any]:
    with user_tracer.start_as_current_span("application work"):
        pass
    return {"sku": "A1"}


def broken() -> dict[str, Any]:
    raise NodeFailed("prepare broke")


def writer(name: str = "writer") -> LlmAgent:
    return LlmAgent(name=name, model=ScriptedModel(script=[reply("written")]), instruction="Write.")


def instrumented(workflow: Workflow) -> InMemoryRunner:
    return adk_otel.instrument(InMemoryRunner(node=workflow, app_name=APP))


def plugged(workflow: Workflow) -> InMemoryRunner:
    """The zero-code path: the plugin alone, no wrapper, no root noted."""
    return InMemoryRunner(node=workflow, app_name=APP, plugins=[adk_otel.AdkOtelPlugin()])


def node(recorder: Recorder, name: str, attempt: int = 1) -> Any:
    found = [
        s
        for s in recorder.spans
        if s.attributes.get(ADK_NODE_NAME) == name and s.attributes.get(ADK_NODE_ATTEMPT) == attempt
    ]
    assert len(found) == 1, (
        f"expected one node {name!r} attempt {attempt}\n{render(recorder.ended)}"
    )
    return found[0]


def one_trace(recorder: Recorder) -> None:
    traces = {s.context.trace_id for s in recorder.ended}
    assert len(traces) == 1, f"spans spread over {len(traces)} traces\n{render(recorder.ended)}"


TOOL_NODE = "execute_tool lookup" if TOOL_NODE_HOOKS else "invoke_node lookup"


@pytest.mark.parametrize("runner_for", [instrumented, plugged], ids=["instrument", "plugin"])
async def test_function_tool_and_agent_nodes(recorder, caplog, runner_for):
    flow = Workflow(name="flow", edges=[("START", prepare, FunctionTool(lookup), writer())])
    result = await drive(runner_for(flow))

    assert result.error is None
    assert_clean(recorder, caplog.records)
    assert shape(recorder) == [
        (0, INV, "OK", "ok"),
        (1, "invoke_node prepare", "OK", "ok"),
        (1, TOOL_NODE, "OK", "ok"),
        (1, "invoke_agent writer", "OK", "ok"),
        (2, MODEL, "OK", "ok"),
    ]
    one_trace(recorder)
    invocation = recorder.one(INV)
    prepared = node(recorder, "prepare")
    assert prepared.attributes[ADK_NODE_PATH] == "flow@1/prepare@1"
    assert prepared.attributes["gen_ai.operation.name"] == "invoke_node"
    assert prepared.attributes[ADK_INVOCATION_ID] == invocation.attributes[ADK_INVOCATION_ID]
    tool = node(recorder, "lookup")
    assert tool.attributes[ADK_NODE_PATH] == "flow@1/lookup@1"
    if runner_for is instrumented:
        # instrument() reads the kinds from the workflow's graph; the plugin
        # alone knows a tool node as one where its tool hooks run in it.
        assert prepared.attributes[ADK_NODE_KIND] == "function"
    if runner_for is instrumented or TOOL_NODE_HOOKS:
        assert tool.attributes[ADK_NODE_KIND] == "tool"
    # The application's own span, opened inside the function node, is its child.
    assert recorder.parent_of(recorder.one("application work")) is prepared
    assert invocation.attributes["gen_ai.workflow.name"] == "flow"


async def test_function_node_fails(recorder, caplog):
    flow = Workflow(name="flow", edges=[("START", broken, writer())])
    result = await drive(instrumented(flow))

    assert isinstance(result.error, NodeFailed)
    assert_clean(recorder, caplog.records)
    assert shape(recorder) == [
        (0, INV, "ERROR", "error"),
        (1, "invoke_node broken", "ERROR", "error"),
    ]
    failed = node(recorder, "broken")
    assert failed.attributes[ERROR_TYPE].endswith("NodeFailed")
    assert failed.attributes[ADK_ERROR_CATEGORY] == "other"
    assert "prepare broke" in (failed.status.description or "")
    (event,) = [e for e in failed.events if e.name == "exception"]
    assert event.attributes["exception.type"].endswith("NodeFailed")
    assert recorder.one(INV).attributes[ERROR_TYPE].endswith("NodeFailed")


async def test_retried_node_shows_each_attempt(recorder, caplog):
    tries = {"n": 0}

    def flaky(node_input: Any) -> Any:
        tries["n"] += 1
        if tries["n"] < 3:
            raise NodeFailed(f"attempt {tries['n']} failed")
        return node_input

    flow = Workflow(
        name="flow",
        edges=[("START", prepare, FunctionNode(func=flaky, retry_config=NO_DELAY))],
    )
    result = await drive(instrumented(flow))

    assert result.error is None
    assert_clean(recorder, caplog.records)
    assert shape(recorder)[:1] == [(0, INV, "OK", "ok")]
    attempts = [node(recorder, "flaky", attempt) for attempt in (1, 2, 3)]
    assert [s.status.status_code for s in attempts] == [
        StatusCode.ERROR,
        StatusCode.ERROR,
        StatusCode.OK,
    ]
    assert {s.attributes[ADK_NODE_PATH] for s in attempts} == {"flow@1/flaky@1"}
    for failed in attempts[:2]:
        assert failed.attributes[ERROR_TYPE].endswith("NodeFailed")
        assert [e.name for e in failed.events] == ["exception"]
    # The run recovered, but its failures are counted on it.
    assert recorder.one(INV).attributes[ADK_ERROR_COUNT] == 2


async def test_nested_workflow_holds_its_nodes_and_agents(recorder, caplog):
    inner = Workflow(name="inner", edges=[("START", prepare, writer("drafter"))])
    flow = Workflow(name="flow", edges=[("START", inner, writer())])
    result = await drive(instrumented(flow))

    assert result.error is None
    assert_clean(recorder, caplog.records)
    assert shape(recorder) == [
        (0, INV, "OK", "ok"),
        (1, "invoke_workflow inner", "OK", "ok"),
        (2, "invoke_node prepare", "OK", "ok"),
        (2, "invoke_agent drafter", "OK", "ok"),
        (3, MODEL, "OK", "ok"),
        (1, "invoke_agent writer", "OK", "ok"),
        (2, MODEL, "OK", "ok"),
    ]
    nested = node(recorder, "inner")
    assert nested.attributes[ADK_NODE_KIND] == "workflow"
    assert nested.attributes["gen_ai.workflow.name"] == "inner"
    assert node(recorder, "prepare").attributes[ADK_NODE_PATH] == "flow@1/inner@1/prepare@1"
    one_trace(recorder)


async def test_fan_out_and_join(recorder, caplog):
    def left() -> str:
        return "left"

    def right() -> str:
        return "right"

    flow = Workflow(
        name="flow",
        edges=[("START", (left, right)), ((left, right), JoinNode(name="merge"))],
    )
    result = await drive(instrumented(flow))

    assert result.error is None
    assert_clean(recorder, caplog.records)
    invocation = recorder.one(INV)
    for name, kind in (("left", "function"), ("right", "function"), ("merge", "join")):
        span = node(recorder, name)
        assert recorder.parent_of(span) is invocation, name
        assert span.attributes[ADK_NODE_KIND] == kind
        assert span.status.status_code is StatusCode.OK


async def test_dynamic_nodes_hang_under_the_node_that_ran_them(recorder, caplog):
    def double(node_input: int) -> int:
        return node_input * 2

    async def fan(ctx: Context) -> list[int]:
        return [await ctx.run_node(double, node_input=i) for i in (1, 2)]

    flow = Workflow(name="flow", edges=[("START", FunctionNode(func=fan, rerun_on_resume=True))])
    result = await drive(instrumented(flow))

    assert result.error is None
    assert_clean(recorder, caplog.records)
    parent = node(recorder, "fan")
    children = [s for s in recorder.spans if s.attributes.get(ADK_NODE_NAME) == "double"]
    assert len(children) == 2, render(recorder.ended)
    assert {recorder.parent_of(s) for s in children} == {parent}
    assert sorted(s.attributes[ADK_NODE_PATH] for s in children) == [
        "flow@1/fan@1/double@1",
        "flow@1/fan@1/double@2",
    ]


async def test_a_node_timeout_is_an_error_on_that_node(recorder, caplog):
    never = asyncio.Event()

    async def stuck() -> str:
        await never.wait()  # the scenario: a node that never finishes
        return "unreachable"

    flow = Workflow(name="flow", edges=[("START", FunctionNode(func=stuck, timeout=0.05))])
    async with asyncio.timeout(30):  # a guard against a hang, not synchronisation
        result = await drive(instrumented(flow))

    assert result.error is not None
    assert_clean(recorder, caplog.records)
    timed_out = node(recorder, "stuck")
    assert timed_out.attributes["adk.outcome"] == "error"
    assert timed_out.attributes[ERROR_TYPE].endswith("NodeTimeoutError")
    assert timed_out.attributes[ADK_ERROR_CATEGORY] == "timeout"
    assert timed_out.attributes["adk.error.retryable"] is True
    assert recorder.one(INV).status.status_code is StatusCode.ERROR


async def test_cancelled_run_ends_its_open_nodes_once(recorder, caplog):
    entered = asyncio.Event()
    never = asyncio.Event()

    async def waiting() -> str:
        entered.set()
        await never.wait()
        return "unreachable"

    flow = Workflow(name="flow", edges=[("START", waiting)])
    task = asyncio.create_task(drive(instrumented(flow)))
    await entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await recorder.settle(lambda r: r.ended_named("invoke_node waiting") and r.ended_named(INV))

    assert_clean(recorder, caplog.records)
    waited = node(recorder, "waiting")
    assert waited.attributes["adk.outcome"] == "cancelled"
    assert waited.status.status_code is StatusCode.UNSET


async def test_concurrent_runs_keep_their_nodes_apart(recorder, caplog):
    flow = Workflow(name="flow", edges=[("START", prepare)])
    runner = instrumented(flow)
    results = await asyncio.gather(drive(runner), drive(runner), drive(runner))

    assert all(r.error is None for r in results)
    assert_clean(recorder, caplog.records)
    invocations = recorder.named(INV)
    assert len(invocations) == 3
    for invocation in invocations:
        mine = [
            s
            for s in recorder.spans
            if s.attributes.get(ADK_INVOCATION_ID) == invocation.attributes[ADK_INVOCATION_ID]
            and s is not invocation
        ]
        assert [s.name for s in mine] == ["invoke_node prepare"]
        assert recorder.parent_of(mine[0]) is invocation
        assert mine[0].context.trace_id == invocation.context.trace_id


# -- adk-otel never shows less than ADK alone ------------------------------------------


def _unit(span: Any) -> str:
    """A span's unit, comparable across ADK's native spans and adk-otel's."""
    name, attributes = span.name, span.attributes
    if span.instrumentation_scope.name == ADK_SCOPE:
        nested = attributes.get("gen_ai.workflow.nested")
        if name == "invocation" or (name.startswith("invoke_workflow") and not nested):
            return "run"
        if name.startswith(("invoke_node ", "invoke_workflow ")):
            return "node " + name.split(" ", 1)[1]
        return name
    if name.startswith("invocation "):
        return "run"
    node_name = attributes.get(ADK_NODE_NAME)
    return f"node {node_name}" if node_name else name


def _units(spans: list[Any]) -> Counter[tuple[str, str, str]]:
    """(unit, parent's unit, failed or not) per span. ADK leaves success
    UNSET where adk-otel says OK: both are "ok". One unit spread over two of
    ADK's spans (its legacy ``invocation`` over the root workflow, a tool
    node's ``execute_tool`` inside its ``invoke_node``) counts once."""
    by_id = {s.context.span_id: s for s in spans}
    rows: Counter[tuple[str, str, str]] = Counter()
    for span in spans:
        if span.name == "call_llm":
            continue  # ADK 2.5's step around a model call: part of the model call's unit
        unit = _unit(span)
        parent = by_id.get(span.parent.span_id) if span.parent else None
        while parent is not None and parent.name == "call_llm":
            parent = by_id.get(parent.parent.span_id) if parent.parent else None
        parent_unit = _unit(parent) if parent is not None else "-"
        if parent_unit == unit or parent_unit == "node " + unit.removeprefix("execute_tool "):
            continue
        failed = "ERROR" if span.status.status_code is StatusCode.ERROR else "ok"
        rows[(unit, parent_unit, failed)] += 1
    return rows


def _flows() -> list[Workflow]:
    tries = {"n": 0}

    def flaky(node_input: Any) -> Any:
        tries["n"] += 1
        if tries["n"] % 2:
            raise NodeFailed("every other attempt")
        return node_input

    inner = Workflow(
        name="inner", edges=[("START", FunctionNode(func=flaky, retry_config=NO_DELAY))]
    )
    branch = writer()
    return [
        Workflow(name="flow", edges=[("START", prepare, inner, writer())]),
        Workflow(name="flow", edges=[("START", prepare, FunctionTool(lookup))]),
        Workflow(
            name="flow",
            edges=[("START", (prepare, branch)), ((prepare, branch), JoinNode(name="merge"))],
        ),
        Workflow(name="flow", edges=[("START", broken)]),
    ]


async def test_adk_otel_shows_every_unit_adks_own_telemetry_shows(recorder, caplog):
    """Same workflows, ADK's native spans alone (as a global SDK provider
    records them without adk-otel), then adk-otel alone: for every native
    span an adk-otel span of the same unit, under the same unit, failed where
    ADK's failed."""
    native: list[Counter[tuple[str, str, str]]] = []
    adk_otel.AdkOtelPlugin(keep_adk_spans=True).prepare()
    try:
        for flow in _flows():
            before = len(recorder.ended)
            await drive(InMemoryRunner(node=flow, app_name=APP))
            new = recorder.ended[before:]
            native.append(_units([s for s in new if s.instrumentation_scope.name == ADK_SCOPE]))
    finally:
        adk_otel.AdkOtelPlugin(keep_adk_spans=False).prepare()
    for flow, theirs in zip(_flows(), native, strict=True):
        before = len(recorder.ended)
        await drive(instrumented(flow))
        new = recorder.ended[before:]
        ours = _units([s for s in new if s.instrumentation_scope.name == INSTRUMENTATION_SCOPE])
        missing = theirs - ours
        assert theirs and not missing, (
            f"adk-otel lacks {dict(missing)}\nADK: {dict(theirs)}\nadk-otel: {dict(ours)}"
        )


async def test_the_route_a_node_chose_is_on_its_span(recorder, caplog):
    def classify(ctx: Context) -> str:
        ctx.route = "refund"
        return "classified"

    def refund() -> str:
        return "refunded"

    def ship() -> str:
        return "shipped"

    flow = Workflow(name="flow", edges=[("START", classify, {"refund": refund, "ship": ship})])
    result = await drive(instrumented(flow))

    assert result.error is None
    assert_clean(recorder, caplog.records)
    assert node(recorder, "classify").attributes[ADK_NODE_ROUTE] == "refund"
    assert node(recorder, "refund").attributes[ADK_NODE_PATH] == "flow@1/refund@1"
    assert not [s for s in recorder.spans if s.attributes.get(ADK_NODE_NAME) == "ship"]
    assert ADK_NODE_ROUTE not in node(recorder, "refund").attributes


async def test_a_run_waiting_for_human_input_is_paused_and_its_resume_links_to_it(recorder, caplog):
    from google.adk.events.request_input import RequestInput
    from google.genai import types

    async def ask(node_input: Any) -> Any:
        yield RequestInput(message="Approve the refund?", interrupt_id="approval-1")

    def refund(node_input: Any) -> str:
        return f"refund {node_input}"

    runner = instrumented(Workflow(name="flow", edges=[("START", ask, refund)]))
    first = await drive(runner, "refund me")
    assert first.error is None
    paused = recorder.one(INV)
    assert paused.attributes["adk.outcome"] == "paused"
    assert paused.status.status_code is StatusCode.UNSET
    assert paused.attributes["adk.interrupt.ids"] == ("approval-1",)
    assert node(recorder, "ask").status.status_code is StatusCode.OK

    answer = types.Content(
        role="user",
        parts=[
            types.Part(
                function_response=types.FunctionResponse(
                    id="approval-1", name="adk_request_input", response={"result": "yes"}
                )
            )
        ],
    )
    second = await drive(runner, session_id=first.session_id, new_message=answer)

    assert second.error is None
    assert_clean(recorder, caplog.records)
    resumed = next(s for s in recorder.named(INV) if s is not paused)
    assert resumed.attributes["adk.outcome"] == "ok"
    assert resumed.attributes["adk.invocation.id"] == paused.attributes["adk.invocation.id"]
    (link,) = resumed.links
    assert (link.context.trace_id, link.context.span_id) == (
        paused.context.trace_id,
        paused.context.span_id,
    )
    assert recorder.parent_of(node(recorder, "refund")) is resumed


async def test_parallel_workers_each_get_a_span_under_the_worker_node(recorder, caplog):
    from google.adk.workflow import node as as_node

    def items() -> list[int]:
        return [1, 2, 3]

    def check(node_input: int) -> int:
        with user_tracer.start_as_current_span(f"checking {node_input}"):
            return node_input * 10

    flow = Workflow(name="flow", edges=[("START", items, as_node(check, parallel_worker=True))])
    result = await drive(instrumented(flow))

    assert result.error is None
    assert_clean(recorder, caplog.records)
    invocation = recorder.one(INV)
    spans = [s for s in recorder.spans if s.attributes.get(ADK_NODE_NAME) == "check"]
    # The worker node, and one span per item it ran.
    (worker,) = [s for s in spans if recorder.parent_of(s) is invocation]
    runs = [s for s in spans if s is not worker]
    assert len(runs) == 3, render(recorder.ended)
    assert {recorder.parent_of(s) for s in runs} == {worker}
    assert len({s.attributes[ADK_NODE_PATH] for s in runs}) == 3
    for i in (1, 2, 3):
        assert recorder.parent_of(recorder.one(f"checking {i}")) in runs
    one_trace(recorder)


async def test_a_childs_failure_a_nested_workflow_keeps_as_data_is_an_error_on_it(recorder, caplog):
    """A workflow catches a failed child and keeps its exception as data: ADK
    records it on the workflow's span, so the nested workflow is ERROR with
    the child's exception, as the child is."""
    inner = Workflow(name="inner", edges=[("START", broken)])
    flow = Workflow(name="flow", edges=[("START", prepare, inner)])
    result = await drive(instrumented(flow))

    assert isinstance(result.error, NodeFailed)
    assert_clean(recorder, caplog.records)
    nested, child = node(recorder, "inner"), node(recorder, "broken")
    assert recorder.parent_of(child) is nested
    # ADK 2.5 keeps the failure without recording it on the workflow: there
    # the child alone shows it (as ADK's own spans do on 2.5).
    for span in (nested, child) if ADK_VERSION >= (2, 13) else (child,):
        assert span.status.status_code is StatusCode.ERROR, span.name
        assert span.attributes[ERROR_TYPE].endswith("NodeFailed"), span.name
        assert [e.name for e in span.events] == ["exception"], span.name
    assert node(recorder, "prepare").status.status_code is StatusCode.OK
    assert recorder.one(INV).attributes[ADK_ERROR_COUNT] >= (2 if ADK_VERSION >= (2, 13) else 1)
