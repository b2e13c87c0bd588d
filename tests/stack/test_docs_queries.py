"""The TraceQL examples in docs/collector.md name things the demo produces, so
a user who runs the demo and pastes an example finds a trace."""

from __future__ import annotations

import re

from adk_otel.cli import demo

from .conftest import REPO


def test_tool_names_in_the_examples_are_demo_tools() -> None:
    docs = (REPO / "docs" / "collector.md").read_text(encoding="utf-8")
    named = set(re.findall(r'gen_ai\.tool\.name = "([^"]+)"', docs))
    assert named, "the docs show a tool query"
    assert named <= {demo.lookup_item.__name__, demo.charge_card.__name__}


def test_failure_categories_in_the_examples_are_documented_and_the_demo_makes_one() -> None:
    import asyncio

    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    import adk_otel
    from adk_otel.reading.failures import Category

    named: set[str] = set()
    for doc in (REPO / "docs" / "collector.md", REPO / "README.md"):
        text = doc.read_text(encoding="utf-8")
        named |= set(re.findall(r'adk\.error\.category = "([^"]+)"', text))
    assert named <= {c.value for c in Category}
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    asyncio.run(demo.run_once(adk_otel.instrument(demo.build_app(), tracer_provider=provider)))
    made = {s.attributes.get("adk.error.category") for s in exporter.get_finished_spans()}
    assert named & made, "an example finds the demo's failure"
