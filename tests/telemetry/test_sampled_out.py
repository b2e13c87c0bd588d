"""A trace the sampler drops: adk-otel builds no attributes for its spans
(the cheap path) yet still ends every one, leaves nothing current, and keeps
recording metrics with their full dimensions."""

from __future__ import annotations

import asyncio

import pytest
from google.adk.agents import LlmAgent
from google.adk.runners import InMemoryRunner
from google.genai import types
from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ALWAYS_ON, ParentBased, TraceIdRatioBased

import adk_otel
from adk_otel import plugin_of
from adk_otel import semconv as sc
from adk_otel.testing.model import ScriptedModel, call, reply

from .harness import Recorded, providers, run


def lookup(sku: str) -> dict:
    """Stock level for a SKU."""
    return {"stock": 3}


def clerk() -> LlmAgent:
    model = ScriptedModel(script=[call("lookup", {"sku": "A"}), reply("done")])
    return LlmAgent(name="clerk", model=model, tools=[lookup])


def sampled_provider(sampler) -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=sampler)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


@pytest.mark.parametrize("plugin_only", [False, True], ids=["instrument", "plugin-only"])
async def test_a_dropped_trace_costs_no_attributes_and_keeps_its_metrics(
    plugin_only: bool,
) -> None:
    """Its metrics are kept: both model-call metrics, the duration and the token usage
    (each recorded at its own hook: the call's end, its response), and every other a kept
    trace records."""
    provider, exporter = sampled_provider(ParentBased(ALWAYS_OFF))
    _, _, meter_provider, reader = providers()
    rec = await run(
        clerk(),
        recorded=Recorded(exporter=exporter, reader=reader),
        tracer_provider=provider,
        meter_provider=meter_provider,
        plugin_only=plugin_only,
    )

    assert rec.error is None
    assert exporter.get_finished_spans() == ()
    plugin = plugin_of(rec.runner)
    assert plugin is not None and plugin.open_spans == 0 and plugin.internal_errors == 0
    assert trace.get_current_span() is trace.INVALID_SPAN
    point = rec.point(
        sc.METRIC_CLIENT_OPERATION_DURATION, {sc.GEN_AI_OPERATION_NAME: "generate_content"}
    )
    assert point.count == 2
    assert point.attributes[sc.GEN_AI_REQUEST_MODEL] == "scripted-model"
    for token_type, tokens in (("input", 12), ("output", 7)):  # the scripted model's usage
        usage = rec.point(
            sc.METRIC_CLIENT_TOKEN_USAGE,
            {sc.GEN_AI_OPERATION_NAME: "generate_content", sc.GEN_AI_TOKEN_TYPE: token_type},
        )
        assert (usage.count, usage.sum) == (2, 2 * tokens)
        assert usage.attributes[sc.GEN_AI_REQUEST_MODEL] == "scripted-model"

    # Every metric a kept trace records, the dropped one records alike: each stream, its
    # dimensions and its recordings (the agent's, the tool's and the invocation's too).
    kept, kept_exporter = sampled_provider(ParentBased(ALWAYS_ON))
    _, _, kept_meters, kept_reader = providers()
    kept_rec = await run(
        clerk(),
        recorded=Recorded(exporter=kept_exporter, reader=kept_reader),
        tracer_provider=kept,
        meter_provider=kept_meters,
        plugin_only=plugin_only,
    )
    assert kept_exporter.get_finished_spans()
    assert recordings(rec) == recordings(kept_rec)
    assert len(recordings(rec)) >= 5


def recordings(rec: Recorded) -> list[tuple[str, list[tuple[str, object]], object]]:
    """Each metric point of a run: its stream, its dimensions and how many recordings it
    holds (a counter's value), timings left out."""
    return sorted(
        (name, sorted(point.attributes.items()), getattr(point, "count", None) or point.value)
        for name in rec.metrics()
        for point in rec.points(name)
    )


@pytest.mark.parametrize("plugin_only", [False, True], ids=["instrument", "plugin-only"])
async def test_the_cheap_path_is_taken_only_when_the_parent_decides(
    monkeypatch, plugin_only: bool
) -> None:
    """With no metrics, a dropped trace's child spans get their layer only (no
    attributes built from ADK objects); a kept trace gets every attribute. Through
    ``instrument()`` a quiet run returns before any span opens; through the plugin
    alone (``Runner(plugins=[AdkOtelPlugin()])``) every hook opens its span, and
    each opening must see the dropped parent itself."""
    from adk_otel.reading import attributes

    built: list[str] = []
    for name in ("agent_opening", "tool_opening", "model_opening"):
        real = getattr(attributes, name)
        monkeypatch.setattr(
            attributes, name, lambda *a, _real=real, _name=name: built.append(_name) or _real(*a)
        )

    dropped, _ = sampled_provider(ParentBased(ALWAYS_OFF))
    no_metrics = NoOpMeterProvider()  # explicit: a global one may exist in this process
    rec = await run(
        clerk(), tracer_provider=dropped, meter_provider=no_metrics, plugin_only=plugin_only
    )
    assert rec.error is None and built == []
    plugin = plugin_of(rec.runner)
    assert plugin is not None and plugin.open_spans == 0 and plugin.internal_errors == 0

    kept, exporter = sampled_provider(ParentBased(TraceIdRatioBased(1.0)))
    await run(
        clerk(),
        recorded=Recorded(exporter=exporter, reader=None),
        tracer_provider=kept,
        meter_provider=no_metrics,
        plugin_only=plugin_only,
    )
    assert sorted(set(built)) == ["agent_opening", "model_opening", "tool_opening"]
    tool = next(s for s in exporter.get_finished_spans() if s.name == "execute_tool lookup")
    assert tool.attributes[sc.GEN_AI_TOOL_NAME] == "lookup"
    assert tool.attributes[sc.GEN_AI_TOOL_CALL_ID]


class CountingParentBased(ParentBased):
    """The SDK's parent-following sampler, counting the decisions asked of it."""

    def __init__(self, root) -> None:
        super().__init__(root)
        self.decisions = 0

    def should_sample(self, *args, **kwargs):
        self.decisions += 1
        return super().should_sample(*args, **kwargs)


async def test_a_dropped_trace_asks_the_sdk_for_its_root_span_only() -> None:
    """Under a sampled-out invocation every child shares the root's
    non-recording span: one sampler decision per run, not one per span, and
    code inside a tool still sees the trace (not sampled) as current."""
    seen = []

    def lookup(sku: str) -> dict:
        """Stock level for a SKU."""
        seen.append(trace.get_current_span().get_span_context())
        return {"stock": 3}

    model = ScriptedModel(script=[call("lookup", {"sku": "A"}), reply("done")])
    sampler = CountingParentBased(ALWAYS_OFF)
    provider, exporter = sampled_provider(sampler)
    rec = await run(
        LlmAgent(name="clerk", model=model, tools=[lookup]),
        tracer_provider=provider,
        meter_provider=NoOpMeterProvider(),
    )

    assert rec.error is None
    assert sampler.decisions == 1  # the invocation span; agent, 2 model calls, tool: none
    assert exporter.get_finished_spans() == ()
    plugin = plugin_of(rec.runner)
    assert plugin is not None and plugin.open_spans == 0 and plugin.internal_errors == 0
    (inside,) = seen
    assert inside.is_valid and not inside.trace_flags.sampled
    assert trace.get_current_span() is trace.INVALID_SPAN


# -- a sampled-out run under instrument(): the root decides once ------------------

TRACE_ID = 0x4BF92F3577B34DA6A3CE929D0E0E4736
CALLER_SPAN_ID = 0x00F067AA0BA902B7


def sampled_out_caller() -> object:
    """The context of a request whose caller did not sample (flags ``00``)."""
    return propagate.extract({"traceparent": f"00-{TRACE_ID:032x}-{CALLER_SPAN_ID:016x}-00"})


def seeing_clerk(seen: list[tuple[str, trace.SpanContext]], tracer: trace.Tracer) -> LlmAgent:
    """A clerk whose own callbacks, tool body and model note the current span,
    and whose tool opens a span of the application's own."""

    def note(where: str) -> None:
        seen.append((where, trace.get_current_span().get_span_context()))

    def lookup(sku: str) -> dict:
        """Stock level for a SKU."""
        note("tool body")
        with tracer.start_as_current_span("application work") as span:
            seen.append(("user span", span.get_span_context()))
        return {"stock": 3}

    def callback(where: str):
        return lambda *args, **kwargs: note(where)

    model = ScriptedModel(script=[call("lookup", {"sku": "A"}), reply("done")])
    return LlmAgent(
        name="clerk",
        model=model,
        tools=[lookup],
        before_agent_callback=callback("before_agent"),
        after_agent_callback=callback("after_agent"),
        before_model_callback=callback("before_model"),
        after_model_callback=callback("after_model"),
        before_tool_callback=callback("before_tool"),
        after_tool_callback=callback("after_tool"),
    )


async def run_in(caller_context: object, agent: LlmAgent, **options) -> object:
    token = otel_context.attach(caller_context)
    try:
        return await run(agent, meter_provider=NoOpMeterProvider(), **options)
    finally:
        otel_context.detach(token)


async def test_every_callback_and_user_span_sees_the_sampled_out_trace(caplog) -> None:
    """A sampled-out run's agent, model and tool hooks do nothing, yet every
    callback of every layer, the tool's body and a span the application opens
    there see the caller's trace (not sampled), nothing is recorded, nothing
    stays open or current and no context is detached out of order."""
    provider, exporter = sampled_provider(ParentBased(TraceIdRatioBased(0.01)))
    seen: list[tuple[str, trace.SpanContext]] = []
    agent = seeing_clerk(seen, provider.get_tracer("app"))
    rec = await run_in(sampled_out_caller(), agent, tracer_provider=provider)

    assert rec.error is None
    wheres = [where for where, _ in seen]
    for where in ("before_agent", "before_model", "after_model", "before_tool", "tool body"):
        assert where in wheres, wheres
    assert {"user span", "after_tool", "after_agent"} <= set(wheres)
    for where, context in seen:
        assert context.is_valid, where
        assert context.trace_id == TRACE_ID, where
        assert not context.trace_flags.sampled, where
    # Every layer's span is the run's own (non-recording) span, not the caller's.
    layers = {context.span_id for where, context in seen if where != "user span"}
    assert len(layers) == 1 and CALLER_SPAN_ID not in layers, seen
    assert exporter.get_finished_spans() == ()
    plugin = plugin_of(rec.runner)
    assert plugin is not None and plugin.open_spans == 0 and plugin.internal_errors == 0
    assert trace.get_current_span() is trace.INVALID_SPAN
    assert not [r for r in caplog.records if "Failed to detach" in r.getMessage()]


async def test_a_sampled_out_run_books_its_root_only(monkeypatch) -> None:
    """The fast path: with nothing to record, the ledger keeps the run's root
    span and nothing under it (its agent, model and tool hooks return at once)."""
    from adk_otel.ledger.spans import Ledger

    opened: list[str] = []
    real = Ledger.start

    def counted(self, key, name, **kwargs):
        opened.append(name)
        return real(self, key, name, **kwargs)

    monkeypatch.setattr(Ledger, "start", counted)
    provider, _ = sampled_provider(ParentBased(ALWAYS_OFF))
    rec = await run(clerk(), tracer_provider=provider, meter_provider=NoOpMeterProvider())

    assert rec.error is None
    assert opened == ["invocation shop"]


async def test_a_child_a_custom_sampler_keeps_is_recorded_under_a_dropped_root() -> None:
    """A sampler that does not follow the parent (here: tool calls always,
    the rest never) still gets every span asked of it: no fast path."""
    from opentelemetry.sdk.trace.sampling import (
        ALWAYS_ON,
        Decision,
        Sampler,
        SamplingResult,
    )

    class ToolsOnly(Sampler):
        def should_sample(self, parent_context, trace_id, name, *args, **kwargs):
            if name.startswith("execute_tool"):
                return ALWAYS_ON.should_sample(parent_context, trace_id, name, *args, **kwargs)
            return SamplingResult(Decision.DROP)

        def get_description(self) -> str:
            return "ToolsOnly"

    provider, exporter = sampled_provider(ToolsOnly())
    rec = await run(clerk(), tracer_provider=provider, meter_provider=NoOpMeterProvider())

    assert rec.error is None
    (tool,) = exporter.get_finished_spans()
    assert tool.name == "execute_tool lookup"
    assert tool.attributes[sc.GEN_AI_TOOL_NAME] == "lookup"
    plugin = plugin_of(rec.runner)
    assert plugin is not None and plugin.open_spans == 0


async def test_concurrent_sampled_out_runs_each_see_their_own_trace() -> None:
    provider, exporter = sampled_provider(ParentBased(ALWAYS_OFF))
    gate = asyncio.Event()
    arrived: list[int] = []
    seen: dict[str, int] = {}

    async def lookup(sku: str) -> dict:
        """Stock level for a SKU; waits until both runs are inside it."""
        arrived.append(1)
        if len(arrived) == 2:
            gate.set()
        await gate.wait()
        seen[sku] = trace.get_current_span().get_span_context().trace_id
        return {"stock": 3}

    def agent(sku: str) -> LlmAgent:
        model = ScriptedModel(script=[call("lookup", {"sku": sku}), reply("done")])
        return LlmAgent(name="clerk", model=model, tools=[lookup])

    async def one(sku: str) -> object:
        carrier = {"traceparent": f"00-{sku * 32}-00f067aa0ba902b7-00"}
        return await run_in(propagate.extract(carrier), agent(sku), tracer_provider=provider)

    first, second = await asyncio.gather(one("a"), one("b"))

    assert first.error is None and second.error is None
    assert seen == {"a": int("a" * 32, 16), "b": int("b" * 32, 16)}
    assert exporter.get_finished_spans() == ()
    for rec in (first, second):
        plugin = plugin_of(rec.runner)
        assert plugin is not None and plugin.open_spans == 0 and plugin.internal_errors == 0
    assert trace.get_current_span() is trace.INVALID_SPAN


async def _sampled_out_runner() -> tuple[InMemoryRunner, str, asyncio.Event, asyncio.Event]:
    provider, _ = sampled_provider(ParentBased(ALWAYS_OFF))
    started, gate = asyncio.Event(), asyncio.Event()

    async def slow_lookup(sku: str) -> dict:
        """Waits for the test to let it finish."""
        started.set()
        await gate.wait()
        return {"sku": sku}

    model = ScriptedModel(script=[call("slow_lookup", {"sku": "A"}), reply("done")])
    runner = adk_otel.instrument(
        InMemoryRunner(
            agent=LlmAgent(name="clerk", model=model, tools=[slow_lookup]), app_name="shop"
        ),
        tracer_provider=provider,
        meter_provider=NoOpMeterProvider(),
    )
    session = await runner.session_service.create_session(app_name="shop", user_id="u1")
    return runner, session.id, started, gate


def _events(runner: InMemoryRunner, session_id: str):
    return runner.run_async(
        user_id="u1", session_id=session_id, new_message=types.UserContent("go")
    )


async def test_a_cancelled_sampled_out_run_leaves_nothing_open(caplog) -> None:
    runner, session_id, started, _ = await _sampled_out_runner()

    async def consume() -> None:
        async for _ in _events(runner, session_id):
            pass

    task = asyncio.create_task(consume())
    await started.wait()
    plugin = plugin_of(runner)
    assert plugin is not None and plugin.open_spans == 1  # the run's root, nothing under it
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert plugin.open_spans == 0 and plugin.internal_errors == 0
    assert trace.get_current_span() is trace.INVALID_SPAN
    assert not [r for r in caplog.records if "Failed to detach" in r.getMessage()]


async def test_a_sampled_out_run_closed_early_leaves_nothing_open(caplog) -> None:
    runner, session_id, _, gate = await _sampled_out_runner()
    gate.set()
    events = _events(runner, session_id)
    async for _ in events:
        break  # the consumer stops at the first event
    await events.aclose()

    plugin = plugin_of(runner)
    assert plugin is not None and plugin.open_spans == 0 and plugin.internal_errors == 0
    assert trace.get_current_span() is trace.INVALID_SPAN
    assert not [r for r in caplog.records if "Failed to detach" in r.getMessage()]


async def test_a_sampled_out_workflow_keeps_its_nodes_in_the_trace() -> None:
    """A workflow's nodes keep their bookkeeping when sampled out: a span the
    application opens inside a function node is in the run's trace."""
    from google.adk.workflow import Workflow

    provider, exporter = sampled_provider(ParentBased(ALWAYS_OFF))
    tracer = provider.get_tracer("app")
    seen: list[trace.SpanContext] = []

    def prepare() -> dict:
        with tracer.start_as_current_span("application work") as span:
            seen.append(span.get_span_context())
        return {"sku": "A1"}

    writer = LlmAgent(name="writer", model=ScriptedModel(script=[reply("written")]))
    flow = Workflow(name="flow", edges=[("START", prepare, writer)])
    runner = adk_otel.instrument(
        InMemoryRunner(node=flow, app_name="shop"),
        tracer_provider=provider,
        meter_provider=NoOpMeterProvider(),
    )
    session = await runner.session_service.create_session(app_name="shop", user_id="u1")
    token = otel_context.attach(sampled_out_caller())
    try:
        async for _ in _events(runner, session.id):
            pass
    finally:
        otel_context.detach(token)

    (inside,) = seen
    assert inside.trace_id == TRACE_ID and not inside.trace_flags.sampled
    assert exporter.get_finished_spans() == ()
    plugin = plugin_of(runner)
    assert plugin is not None and plugin.open_spans == 0 and plugin.internal_errors == 0
    assert trace.get_current_span() is trace.INVALID_SPAN
