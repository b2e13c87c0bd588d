"""A trace the sampler drops: adk-otel builds no attributes for its spans
(the cheap path) yet still ends every one, leaves nothing current, and keeps
recording metrics with their full dimensions."""

from __future__ import annotations

from google.adk.agents import LlmAgent
from opentelemetry import trace
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ParentBased, TraceIdRatioBased

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


async def test_a_dropped_trace_costs_no_attributes_and_keeps_its_metrics() -> None:
    provider, exporter = sampled_provider(ParentBased(ALWAYS_OFF))
    _, _, meter_provider, reader = providers()
    rec = await run(
        clerk(),
        recorded=Recorded(exporter=exporter, reader=reader),
        tracer_provider=provider,
        meter_provider=meter_provider,
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


async def test_the_cheap_path_is_taken_only_when_the_parent_decides(monkeypatch) -> None:
    """With no metrics, a dropped trace's child spans get their layer only (no
    attributes built from ADK objects); a kept trace gets every attribute."""
    from adk_otel.reading import attributes

    built: list[str] = []
    for name in ("agent_opening", "tool_opening", "model_opening"):
        real = getattr(attributes, name)
        monkeypatch.setattr(
            attributes, name, lambda *a, _real=real, _name=name: built.append(_name) or _real(*a)
        )

    dropped, _ = sampled_provider(ParentBased(ALWAYS_OFF))
    no_metrics = NoOpMeterProvider()  # explicit: a global one may exist in this process
    rec = await run(clerk(), tracer_provider=dropped, meter_provider=no_metrics)
    assert rec.error is None and built == []

    kept, exporter = sampled_provider(ParentBased(TraceIdRatioBased(1.0)))
    await run(
        clerk(),
        recorded=Recorded(exporter=exporter, reader=None),
        tracer_provider=kept,
        meter_provider=no_metrics,
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
