"""``keep_adk_spans=True``: ADK's own spans (scope ``gcp.vertex.agent``) are
recorded next to ours, and the two layers still form one connected tree."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from google.adk.agents import LlmAgent
from google.adk.runners import InMemoryRunner
from opentelemetry.sdk import trace as sdk_trace
from opentelemetry.sdk.trace import ReadableSpan

import adk_otel
from adk_otel.semconv import ADK_SCOPE
from adk_otel.testing.model import call, fail, reply

from .agents import ToolFailed, clerk
from .harness import APP, assert_clean, drive, render, shape

INV = f"invocation {APP}"
MODEL = "generate_content scripted-model"
SUPPRESSING = "_adk_otel_suppresses_adk_scope"


@pytest.fixture
def adk_scope_on(global_provider: sdk_trace.TracerProvider) -> Iterator[None]:
    """Undo the session provider's (sticky) switch-off of ADK's scope for this
    test only, whatever ran before, and put it back afterwards."""
    previous = global_provider._tracer_configurator
    was_suppressing = getattr(global_provider, SUPPRESSING, None)
    global_provider._set_tracer_configurator(
        tracer_configurator=sdk_trace._default_tracer_configurator
    )
    if was_suppressing is not None:
        delattr(global_provider, SUPPRESSING)
    try:
        yield
    finally:
        global_provider._set_tracer_configurator(tracer_configurator=previous)
        if was_suppressing is not None:
            setattr(global_provider, SUPPRESSING, was_suppressing)
        elif hasattr(global_provider, SUPPRESSING):
            delattr(global_provider, SUPPRESSING)


def clerk_runner(agent: LlmAgent) -> InMemoryRunner:
    return InMemoryRunner(agent=agent, app_name=APP)


def assert_one_connected_tree(spans: list[ReadableSpan]) -> ReadableSpan:
    """Exactly one root, every other span's parent recorded, one trace."""
    tree = render(spans)
    ids = {s.context.span_id for s in spans}
    roots = [s for s in spans if s.parent is None]
    assert len(roots) == 1, f"{len(roots)} roots\n{tree}"
    broken = [s.name for s in spans if s.parent is not None and s.parent.span_id not in ids]
    assert not broken, f"broken parent links: {broken}\n{tree}"
    assert len({s.context.trace_id for s in spans}) == 1, tree
    return roots[0]


def ancestors(span: ReadableSpan, by_id: dict[int, ReadableSpan]) -> list[str]:
    names = []
    while span.parent is not None:
        span = by_id[span.parent.span_id]
        names.append(f"{span.name} [{span.instrumentation_scope.name}]")
    return names


async def test_adk_spans_kept_in_one_tree(recorder, caplog, adk_scope_on):
    runner = adk_otel.instrument(
        clerk_runner(clerk(call("lookup", {"sku": "A1"}), reply("3 left"))),
        keep_adk_spans=True,
    )

    result = await drive(runner)

    assert result.error is None
    assert_clean(recorder, caplog.records, allow_adk_spans=True)
    adk_names = {s.name for s in recorder.adk_spans}
    assert {"invoke_agent clerk", "execute_tool lookup", MODEL} <= adk_names, render(recorder.ended)
    root = assert_one_connected_tree(recorder.ended)
    # ADK opens its run span before any plugin hook, so it is the root and
    # our invocation span its child; our own layer keeps its shape below.
    assert root.instrumentation_scope.name == ADK_SCOPE
    invocation = recorder.one(INV)
    assert invocation.parent.span_id == root.context.span_id
    assert shape(recorder) == [
        (0, INV, "OK", "ok"),
        (1, "invoke_agent clerk", "OK", "ok"),
        (2, MODEL, "OK", "ok"),
        (2, "execute_tool lookup", "OK", "ok"),
        (2, MODEL, "OK", "ok"),
    ]
    by_id = {s.context.span_id: s for s in recorder.ended}
    for span in recorder.adk_spans:
        if span is not root:
            assert f"{root.name} [{ADK_SCOPE}]" in ancestors(span, by_id), span.name


async def test_adk_spans_kept_when_the_tool_fails(recorder, caplog, adk_scope_on):
    runner = adk_otel.instrument(
        clerk_runner(clerk(call("lookup", {"sku": "bad"}), reply("never"))),
        keep_adk_spans=True,
    )

    result = await drive(runner)

    assert isinstance(result.error, ToolFailed)
    assert_clean(recorder, caplog.records, allow_adk_spans=True)
    assert recorder.adk_spans
    assert_one_connected_tree(recorder.ended)
    assert shape(recorder) == [
        (0, INV, "ERROR", "error"),
        (1, "invoke_agent clerk", "ERROR", "error"),
        (2, MODEL, "OK", "ok"),
        (2, "execute_tool lookup", "ERROR", "error"),
    ]


async def test_adk_spans_kept_when_the_model_fails(recorder, caplog, adk_scope_on):
    boom = RuntimeError("model down")
    runner = adk_otel.instrument(clerk_runner(clerk(fail(boom))), keep_adk_spans=True)

    result = await drive(runner)

    assert result.error is boom
    assert_clean(recorder, caplog.records, allow_adk_spans=True)
    assert recorder.adk_spans
    assert_one_connected_tree(recorder.ended)
    assert shape(recorder) == [
        (0, INV, "ERROR", "error"),
        (1, "invoke_agent clerk", "ERROR", "error"),
        (2, MODEL, "ERROR", "error"),
    ]


# Where an ADK span may hang when its parent is one of adk-otel's: under the
# adk-otel span of the layer that was running (and current) when ADK opened it.
WOVEN_UNDER = {
    "invoke_agent": "invocation",
    "call_llm": "invoke_agent",
    "generate_content": "generate_content",
    "execute_tool": "invoke_agent",
}


async def test_the_two_trees_when_adk_spans_are_kept(recorder, caplog, adk_scope_on):
    """The shape the docs promise with ``keep_adk_spans=True``: adk-otel's
    tree is whole (each of its spans under one of its own, the invocation
    under ADK's run span); ADK's spans hang under ADK's, or under the adk-otel
    span current when ADK opened them (its layer's, as for any library span)."""
    runner = adk_otel.instrument(
        clerk_runner(clerk(call("lookup", {"sku": "A1"}), reply("3 left"))),
        keep_adk_spans=True,
    )

    await drive(runner)

    assert_clean(recorder, caplog.records, allow_adk_spans=True)
    tree = render(recorder.ended)
    by_id = {s.context.span_id: s for s in recorder.ended}
    root = assert_one_connected_tree(recorder.ended)
    assert root.instrumentation_scope.name == ADK_SCOPE, tree
    for span in recorder.spans:
        parent = by_id[span.parent.span_id]
        if span.name == INV:
            assert parent is root, tree
        else:
            assert parent.instrumentation_scope.name != ADK_SCOPE, f"{span.name}\n{tree}"
    for span in recorder.adk_spans:
        if span is root:
            continue
        parent = by_id[span.parent.span_id]
        if parent.instrumentation_scope.name != ADK_SCOPE:
            layer = WOVEN_UNDER[span.name.split()[0]]
            assert parent.name.startswith(layer), f"{span.name} under {parent.name}\n{tree}"


async def test_a_workflow_with_adk_spans_kept_is_one_connected_tree(recorder, caplog, adk_scope_on):
    """The documented shape for a Workflow with ``keep_adk_spans=True``: ADK's
    own spans are recorded (its tracer is the SDK's again), ADK's run span is
    the root, and adk-otel's invocation, agent and model spans hang in the same
    connected tree beside ADK's node spans; no adk-otel node spans then (ADK's
    stand for the nodes)."""
    from google.adk.workflow import Workflow

    def prepare() -> str:
        return "ready"

    flow = Workflow(name="flow", edges=[("START", prepare, clerk(reply("done")))])
    runner = adk_otel.instrument(InMemoryRunner(node=flow, app_name=APP), keep_adk_spans=True)
    try:
        result = await drive(runner)
    finally:
        adk_otel.AdkOtelPlugin(keep_adk_spans=False).prepare()  # the session's default again

    assert result.error is None
    assert_clean(recorder, caplog.records, allow_adk_spans=True)
    root = assert_one_connected_tree(recorder.ended)
    # ADK 2.13's run span is its root workflow's; 2.5's a legacy ``invocation``.
    assert root.instrumentation_scope.name == ADK_SCOPE
    assert root.name in ("invoke_workflow flow", "invocation")
    by_id = {s.context.span_id: s for s in recorder.ended}
    (node,) = [s for s in recorder.adk_spans if s.name == "invoke_node prepare"]
    assert by_id[node.parent.span_id].instrumentation_scope.name == ADK_SCOPE
    assert {s.name for s in recorder.spans} == {INV, "invoke_agent clerk", MODEL}
    assert recorder.parent_of(recorder.one(INV)).instrumentation_scope.name == ADK_SCOPE
