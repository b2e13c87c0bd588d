"""One run of ADK's ``AnthropicLlm`` in a fresh process whose global provider is an SDK
provider (as Agent Engine, the zero-code agent and Phoenix's ``register`` set it), so the
anthropic SDK's own tracing (on by default) records each call too. Prints what backends add
up, as JSON: ``python global_provider_child.py BASE_URL traced|alone``."""

from __future__ import annotations

import asyncio
import json
import os
import sys

from google.adk.agents import LlmAgent
from google.adk.models.anthropic_llm import AnthropicLlm
from google.adk.runners import InMemoryRunner
from google.genai import types
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import adk_otel


async def main(base_url: str, traced: bool) -> None:
    os.environ["ANTHROPIC_BASE_URL"] = base_url
    os.environ["ANTHROPIC_API_KEY"] = "test-key"  # never sent anywhere but loopback
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    reader = InMemoryMetricReader()
    metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
    runner = InMemoryRunner(
        agent=LlmAgent(name="clerk", model=AnthropicLlm(model="claude-sonnet-4")), app_name="shop"
    )
    if traced:
        runner = adk_otel.instrument(runner)
    for turn in range(2):
        session = await runner.session_service.create_session(app_name="shop", user_id="u")
        async for _ in runner.run_async(
            user_id="u", session_id=session.id, new_message=types.UserContent(f"stock {turn}?")
        ):
            pass
    spans = [
        {
            "name": s.name,
            "scope": s.instrumentation_scope.name if s.instrumentation_scope else "",
            "attributes": {
                k: v for k, v in (s.attributes or {}).items() if not isinstance(v, tuple)
            },
        }
        for s in exporter.get_finished_spans()
    ]
    token_metric = 0.0
    data = reader.get_metrics_data()
    for resource in data.resource_metrics if data is not None else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == "gen_ai.client.token.usage":
                    for point in metric.data.data_points:
                        if (point.attributes or {}).get("gen_ai.token.type") == "input":
                            token_metric += point.sum  # type: ignore[attr-defined]
    print(json.dumps({"spans": spans, "input_token_metric": token_metric}))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2] == "traced"))
