from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.runners import InMemoryRunner
from google.genai import types
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from testing.builders import TraceBuilder, build_shop

from adk_otel import instrument
from adk_otel.testing import ScriptedModel, call, reply
from adk_otel.testing.receiver import OtlpReceiver
from adk_otel.traces.io.model import SpanRecord
from adk_otel.traces.io.otlp_json import OtlpJsonFileExporter

DATA = Path(__file__).parent / "data"


@pytest.fixture
def collector_file() -> Path:
    """Written the way the Collector's file exporter writes (hex ids, two batches)."""
    return DATA / "collector_shop.jsonl"


@pytest.fixture
def shop_spec() -> Path:
    return DATA / "shop_spec.yaml"


@pytest.fixture
def exported_file(tmp_path: Path) -> Path:
    """The shop trace exported by an SDK pipeline into an OTLP JSON file."""
    path = tmp_path / "traces.jsonl"
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(OtlpJsonFileExporter(path)))
    build_shop(TraceBuilder(provider))
    provider.shutdown()
    return path


@dataclass(frozen=True)
class Exported:
    """Real ADK runs as the SDK's OTLP exporter sent them, and as the SDK recorded them."""

    requests: list[Any]
    records: list[SpanRecord]


def lookup(sku: str) -> dict[str, Any]:
    """Stock level for a SKU."""
    return {"sku": sku, "stock": 3}


async def _run(runner: InMemoryRunner, app: str) -> None:
    session = await runner.session_service.create_session(app_name=app, user_id="u1")
    message = types.Content(role="user", parts=[types.Part(text="is A1 in stock?")])
    async for _ in runner.run_async(user_id="u1", session_id=session.id, new_message=message):
        pass


@pytest.fixture(scope="module")
def exported() -> Exported:
    """Two runs of service "shop" and one of "billing", each instrumented with
    adk-otel and exported over OTLP/HTTP to the package's test receiver."""
    records: list[SpanRecord] = []
    with OtlpReceiver() as receiver:
        for service, runs in (("shop", 2), ("billing", 1)):
            memory = InMemorySpanExporter()
            provider = TracerProvider(resource=Resource.create({"service.name": service}))
            provider.add_span_processor(
                SimpleSpanProcessor(OTLPSpanExporter(endpoint=receiver.http_endpoint, timeout=5))
            )
            provider.add_span_processor(SimpleSpanProcessor(memory))
            for _ in range(runs):
                model = ScriptedModel(script=[call("lookup", {"sku": "A1"}), reply("in stock")])
                agent = LlmAgent(name="root", model=model, tools=[lookup])
                runner = InMemoryRunner(agent=agent, app_name=service)
                asyncio.run(_run(instrument(runner, tracer_provider=provider), service))
            provider.shutdown()
            records += [SpanRecord.from_readable(span) for span in memory.get_finished_spans()]
        receiver.wait_for(len(records))
        return Exported(list(receiver.requests), records)


def _provider(service: str, endpoint: str, memory: InMemorySpanExporter) -> TracerProvider:
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=endpoint, timeout=5)))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    return provider


@pytest.fixture(scope="module")
def crossing() -> Exported:
    """Traces that cross services, exported over OTLP/HTTP to the test receiver.

    "shop"'s agent calls a tool ``charge`` that runs "billing"'s agent (its own
    runner, instrumented with its own provider): billing's invocation continues
    the context of shop's tool span, as a served remote agent continues its
    caller's. Then one shop run and one billing run alone: three traces, one
    holding both services.
    """
    memory = InMemorySpanExporter()
    with OtlpReceiver() as receiver:
        shop = _provider("shop", receiver.http_endpoint, memory)
        billing = _provider("billing", receiver.http_endpoint, memory)

        def billing_runner() -> InMemoryRunner:
            model = ScriptedModel(script=[call("lookup", {"sku": "A1"}), reply("charged")])
            agent = LlmAgent(name="payments", model=model, tools=[lookup])
            return instrument(
                InMemoryRunner(agent=agent, app_name="billing"), tracer_provider=billing
            )

        async def charge(sku: str) -> str:
            """Charge for a SKU (billing runs it)."""
            await _run(billing_runner(), "billing")
            return "charged"

        model = ScriptedModel(script=[call("charge", {"sku": "A1"}), reply("done")])
        agent = LlmAgent(name="checkout", model=model, tools=[charge])
        asyncio.run(
            _run(
                instrument(InMemoryRunner(agent=agent, app_name="shop"), tracer_provider=shop),
                "shop",
            )
        )
        model = ScriptedModel(script=[call("lookup", {"sku": "A1"}), reply("in stock")])
        agent = LlmAgent(name="root", model=model, tools=[lookup])
        asyncio.run(
            _run(
                instrument(InMemoryRunner(agent=agent, app_name="shop"), tracer_provider=shop),
                "shop",
            )
        )
        asyncio.run(_run(billing_runner(), "billing"))
        shop.shutdown()
        billing.shutdown()
        records = [SpanRecord.from_readable(span) for span in memory.get_finished_spans()]
        receiver.wait_for(len(records))
        return Exported(list(receiver.requests), records)
