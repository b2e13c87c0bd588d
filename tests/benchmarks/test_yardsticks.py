"""The benchmark yardsticks make the trees adk-otel makes.

``overhead.py`` reads adk-otel's cost against ``necessary`` and
``guaranteed``, tracers written the simplest way; the comparison means
something only if they do the same job: the same spans under the same
parents, and for ``guaranteed`` the same roll-ups on agent and invocation
spans."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import adk_otel
from adk_otel import semconv as sc

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
ROLLUPS = (
    sc.ADK_MODEL_CALL_COUNT,
    sc.ADK_TOOL_CALL_COUNT,
    sc.ADK_ERROR_COUNT,
    sc.ADK_USAGE_INPUT_TOKENS,
    sc.ADK_USAGE_OUTPUT_TOKENS,
)


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_bench_{name}", BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


overhead, workloads = _load("overhead"), _load("workloads")


def _trace(workload: str, config: str) -> list[tuple[str, str | None, tuple[Any, ...]]]:
    """(name, parent's name, roll-ups) of each span the configuration made in
    one run, ADK's own spans left out."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    runner = workloads.runner_for(workload)
    if config == "adk_otel":
        adk_otel.instrument(runner, tracer_provider=provider, keep_adk_spans=True)
    else:
        overhead.install_yardstick(runner, config, provider, {})

    async def once() -> None:
        await workloads.invoke(runner, await workloads.new_session(runner))

    asyncio.run(once())
    provider.shutdown()
    spans = [
        s for s in exporter.get_finished_spans() if s.instrumentation_scope.name != sc.ADK_SCOPE
    ]
    names = {s.context.span_id: s.name for s in spans}
    return sorted(
        (
            s.name,
            names.get(s.parent.span_id) if s.parent is not None else None,
            tuple((s.attributes or {}).get(key) for key in ROLLUPS),
        )
        for s in spans
    )


@pytest.mark.parametrize("workload", ["single", "tool", "sequential"])
def test_the_yardsticks_make_adk_otels_trees(workload):
    ours = _trace(workload, "adk_otel")
    assert len(ours) == {"single": 3, "tool": 5, "sequential": 8}[workload]
    tree = [(name, parent) for name, parent, _ in ours]
    assert [(name, parent) for name, parent, _ in _trace(workload, "necessary")] == tree
    assert _trace(workload, "guaranteed") == ours
