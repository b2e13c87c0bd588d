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
from collections.abc import Callable, Coroutine
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


def _spans(runner: Any, config: str, drive: Callable[[], Coroutine[Any, Any, None]]) -> list[Any]:
    """Every span ``config`` (adk-otel or a yardstick) ended on ``runner``
    while ``drive`` ran, ADK's own spans left out."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    if config == "adk_otel":
        adk_otel.instrument(runner, tracer_provider=provider, keep_adk_spans=True)
    else:
        overhead.install_yardstick(runner, config, provider, {})
    asyncio.run(drive())
    provider.shutdown()
    return [
        s for s in exporter.get_finished_spans() if s.instrumentation_scope.name != sc.ADK_SCOPE
    ]


def _trace(workload: str, config: str) -> list[tuple[str, str | None, tuple[Any, ...]]]:
    """(name, parent's name, roll-ups) of each span the configuration made in
    one run, ADK's own spans left out."""
    runner = workloads.runner_for(workload)

    async def once() -> None:
        await workloads.invoke(runner, await workloads.new_session(runner))

    spans = _spans(runner, config, once)
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


# -- what the simplest tracer leaves out is not optional ----------------------------


def _concurrent_runs(config: str, skus: list[str]) -> list[Any]:
    """Every span ``config`` ended while the runs for ``skus`` (one each, on
    one runner) ran at once (see _spans)."""
    from google.adk.agents import LlmAgent
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    from adk_otel.testing.model import ScriptedModel, call, reply

    everyone_asked = asyncio.Event()
    asked: list[str] = []

    def step(request: Any) -> Any:
        # Each run's first model call waits until every run has made its own,
        # so all of them are in flight at once (an event, not a sleep).
        if any(c.role == "model" for c in request.contents):
            return reply("done")
        sku = next(c.parts[0].text for c in request.contents if c.role == "user")
        asked.append(sku)
        if len(asked) == len(skus):
            everyone_asked.set()
        return call("lookup", {"sku": sku}, gate=everyone_asked)

    def lookup(sku: str) -> dict[str, Any]:
        """Stock level of one SKU."""
        if sku.startswith("bad"):
            raise LookupError(f"no such sku: {sku}")
        return {"sku": sku, "stock": 3}

    agent = LlmAgent(name="clerk", model=ScriptedModel(choose=step), tools=[lookup])
    runner = InMemoryRunner(agent=agent, app_name=workloads.APP)

    async def one(sku: str) -> None:
        session = await runner.session_service.create_session(
            app_name=workloads.APP, user_id=workloads.USER
        )
        message = types.Content(role="user", parts=[types.Part(text=sku)])
        try:
            async for _ in runner.run_async(
                user_id=workloads.USER, session_id=session.id, new_message=message
            ):
                pass
        except LookupError:
            pass

    async def all_at_once() -> None:
        async with asyncio.timeout(30):  # a guard against a deadlock, not synchronisation
            await asyncio.gather(*(one(sku) for sku in skus))

    spans = _spans(runner, config, all_at_once)
    assert everyone_asked.is_set()
    return spans


def _faults(spans: list[Any], skus: list[str]) -> list[str]:
    """What is wrong with the traces of concurrent runs of ``skus``: each run
    should be one trace of its own (an invocation span, its agent span, the
    tool call under the agent), and a failed tool call an ERROR span."""
    faults = []
    by_trace: dict[int, list[Any]] = {}
    for span in spans:
        by_trace.setdefault(span.context.trace_id, []).append(span)
    if len(by_trace) != len(skus):
        faults.append(f"{len(by_trace)} traces for {len(skus)} runs")
    for trace_spans in by_trace.values():
        names = {s.name: s for s in trace_spans}
        agent, tool = names.get("invoke_agent clerk"), names.get("execute_tool lookup")
        if agent is None or tool is None:
            faults.append(f"a trace without its agent or tool span: {sorted(names)}")
        elif tool.parent is None or tool.parent.span_id != agent.context.span_id:
            faults.append("a tool call not under its own run's agent")
    failed = [s for s in spans if s.name == "execute_tool lookup" and s.events]
    errors = [s for s in spans if s.name == "execute_tool lookup" and not s.status.is_ok]
    bad = sum(sku.startswith("bad") for sku in skus)
    if len(errors) != bad or len(failed) != bad:
        faults.append(f"{len(errors)} failed tool spans for {bad} failed tool calls")
    return faults


def test_guaranteed_is_cheaper_only_for_what_it_leaves_out():
    """``guaranteed`` (the simplest tracer keeping adk-otel's promises on one
    successful run) keeps one run at a time and has no error hooks. On a
    server, runs overlap and tools fail: there its traces are wrong, where
    adk-otel's are right. What adk-otel costs beyond it (concurrent runs kept
    apart, error hooks, outcomes on every path) is work that cannot go."""
    skus = ["A1", "bad-2", "A3"]
    assert _faults(_concurrent_runs("adk_otel", skus), skus) == []
    faults = _faults(_concurrent_runs("guaranteed", skus), skus)
    # Measured on ADK 2.13 and 2.5: the three runs share one trace, tool calls
    # hang under another run's agent, spans are lost, the failed call is not an error.
    assert any(f.endswith("traces for 3 runs") for f in faults), faults
    assert any(f.endswith("failed tool spans for 1 failed tool calls") for f in faults), faults
