"""The ``lean`` yardstick does adk-otel's job, so adk-otel's cost can be read against it.

``overhead.py`` and the other benchmarks hold adk-otel's cost against
``benchmarks/lean.py``, a lean hook tracer that claims to write what adk-otel
writes on the benchmark workloads and to keep its core guarantees. These
tests hold it to that on real ADK (``InMemoryRunner``, the benchmark
workloads), beside adk-otel itself. Each guarantee's test is also run with
the piece of lean that keeps it switched off (``lean.PIECES``), and must then
fail: the tests can fail, and no piece of lean is there for nothing.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Coroutine
from importlib.metadata import version
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.runners import InMemoryRunner
from google.genai import types
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace import Span as SdkSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import adk_otel
from adk_otel import semconv as sc
from adk_otel.testing.model import ScriptedModel, call, reply

from .scripts import load

IDS = (sc.ADK_INVOCATION_ID, sc.GEN_AI_CONVERSATION_ID, sc.GEN_AI_TOOL_CALL_ID)
"""Attributes whose values differ from run to run: compared by presence."""


lean, workloads = load("lean"), load("workloads")
_ADK = tuple(int(part) for part in version("google-adk").split(".")[:2])


class _Starts(SpanProcessor):
    """The spans started, by span id: (name, scope)."""

    def __init__(self) -> None:
        self.started: dict[int, tuple[str, str]] = {}

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        self.started[span.context.span_id] = (span.name, span.instrumentation_scope.name)


def _spans(
    runner: Any,
    config: str,
    drive: Callable[[], Coroutine[Any, Any, None]],
    off: frozenset[str] = frozenset(),
) -> list[ReadableSpan]:
    """Every span ``config`` (``adk_otel`` or ``lean``, with pieces ``off``)
    ended on ``runner`` while ``drive`` ran, ADK's own spans left out."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    if config == "adk_otel":
        adk_otel.instrument(runner, tracer_provider=provider, keep_adk_spans=True)
    else:
        lean.install(runner, provider, off)
    asyncio.run(drive())
    provider.shutdown()
    return [
        s for s in exporter.get_finished_spans() if s.instrumentation_scope.name != sc.ADK_SCOPE
    ]


def _shape(spans: list[ReadableSpan]) -> list[tuple[Any, ...]]:
    """What a span says, but its times and ids: name, kind, parent's name,
    status, attributes (ids by presence), events (exceptions by type)."""
    names = {s.context.span_id: s.name for s in spans}
    return sorted(
        (
            s.name,
            s.kind.name,
            names.get(s.parent.span_id) if s.parent is not None else None,
            s.status.status_code.name,
            s.status.description,
            tuple(sorted((k, "<id>" if k in IDS else v) for k, v in (s.attributes or {}).items())),
            tuple((e.name, (e.attributes or {}).get("exception.type")) for e in s.events),
        )
        for s in spans
    )


def _workload(name: str, config: str, off: frozenset[str] = frozenset()) -> list[tuple[Any, ...]]:
    """Two runs of benchmark workload ``name``, each on a new session."""
    runner = workloads.runner_for(name)

    async def twice() -> None:
        for _ in range(2):
            await workloads.invoke(runner, await workloads.new_session(runner))

    return _shape(_spans(runner, config, twice, off))


# -- tools and paths -------------------------------------------------------------

_started = {"slow": asyncio.Event()}


def lookup(sku: str) -> dict[str, Any]:
    """Stock level of one SKU."""
    if sku.startswith("bad"):
        raise LookupError(f"no such sku: {sku}")
    return {"sku": sku, "stock": 3}


async def slow(sku: str) -> dict[str, Any]:
    """Waits for ever (until cancelled)."""
    _started["slow"].set()
    await asyncio.Event().wait()
    return {}


PATHS = {
    # path -> (the tool the model calls, its argument, the invocation's outcome)
    "ok": (lookup, "A1", "ok"),
    "error": (lookup, "bad-1", "error"),
    "cancelled": (slow, "A1", "cancelled"),
    "closed": (lookup, "A1", "incomplete"),
}


def _clerk(tool: Any, sku: str, **callbacks: Any) -> InMemoryRunner:
    model = ScriptedModel(script=[call(tool.__name__, {"sku": sku}), reply("done")])
    agent = LlmAgent(name="clerk", model=model, tools=[tool], **callbacks)
    return InMemoryRunner(agent=agent, app_name=workloads.APP)


async def _drive(runner: InMemoryRunner, path: str) -> None:
    """One run on ``runner`` that ends as ``path`` says: consumed to the end
    (``ok``; ``error``, where the tool raises), its consumer task cancelled
    while the tool runs (``cancelled``), or closed after its first event
    (``closed``)."""
    session = await runner.session_service.create_session(
        app_name=workloads.APP, user_id=workloads.USER
    )
    message = types.Content(role="user", parts=[types.Part(text="go")])
    run = runner.run_async(user_id=workloads.USER, session_id=session.id, new_message=message)
    if path == "closed":
        async for _ in run:
            break
        await run.aclose()
        return

    async def consume() -> None:
        async for _ in run:
            pass

    if path == "cancelled":
        _started["slow"] = asyncio.Event()
        task = asyncio.create_task(consume())
        await asyncio.wait_for(_started["slow"].wait(), 30)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return
    try:
        await consume()
    except LookupError:
        assert path == "error"


# -- the same spans as adk-otel ----------------------------------------------------


@pytest.mark.parametrize("workload", ["single", "tool", "sequential"])
def test_lean_writes_adk_otels_spans(workload):
    """Same spans, names, kinds, parents, attributes and values (roll-ups,
    gen_ai.* request, response and usage, adk.outcome), status and events."""
    ours = _workload(workload, "adk_otel")
    assert len(ours) == 2 * workloads.ADK_OTEL_SPANS[workload]
    assert _workload(workload, "lean") == ours


def test_lean_writes_adk_otels_spans_for_a_failing_tool():
    """The tool span ERROR with its exception event, and the error counted up."""

    def spans(config: str) -> list[tuple[Any, ...]]:
        runner = _clerk(lookup, "bad-1")
        return _shape(_spans(runner, config, lambda: _drive(runner, "error")))

    ours = spans("adk_otel")
    tool = next(s for s in ours if s[0] == "execute_tool lookup")
    assert tool[3] == "ERROR" and tool[6] == (("exception", "LookupError"),)
    assert spans("lean") == ours


@pytest.mark.parametrize("piece", ["rollups", "reading"])
def test_the_comparison_sees_a_piece_missing(piece):
    assert _workload("tool", "lean", frozenset({piece})) != _workload("tool", "adk_otel")


# -- concurrent runs ----------------------------------------------------------------


def _concurrent_runs(config: str, skus: list[str], off: frozenset[str] = frozenset()) -> list[Any]:
    """Every span ``config`` ended while the runs for ``skus`` (one each, on
    one runner) ran at once (see _spans)."""
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

    spans = _spans(runner, config, all_at_once, off)
    assert everyone_asked.is_set()
    return spans


def _faults(spans: list[Any], skus: list[str]) -> list[str]:
    """What is wrong with the traces of concurrent runs of ``skus``: each run
    should be one trace of its own (an invocation span, its agent span, the
    tool call under the agent, the model calls), and a failed tool call an
    ERROR span with its exception."""
    faults = []
    by_trace: dict[int, list[Any]] = {}
    for span in spans:
        by_trace.setdefault(span.context.trace_id, []).append(span)
    if len(by_trace) != len(skus):
        faults.append(f"{len(by_trace)} traces for {len(skus)} runs")
    for trace_spans in by_trace.values():
        names = Counter(s.name for s in trace_spans)
        agent = next((s for s in trace_spans if s.name == "invoke_agent clerk"), None)
        tool = next((s for s in trace_spans if s.name == "execute_tool lookup"), None)
        if agent is None or tool is None or names["invocation bench"] != 1:
            faults.append(f"a trace without its invocation, agent or tool span: {sorted(names)}")
        elif tool.parent is None or tool.parent.span_id != agent.context.span_id:
            faults.append("a tool call not under its own run's agent")
    bad = sum(sku.startswith("bad") for sku in skus)
    if len(spans) != 5 * len(skus) - bad:  # a failed run makes one model call, not two
        faults.append(f"{len(spans)} spans for {len(skus)} runs")
    failed = [
        s
        for s in spans
        if s.name == "execute_tool lookup"
        and s.status.status_code.name == "ERROR"
        and [e.name for e in s.events] == ["exception"]
    ]
    if len(failed) != bad:
        faults.append(f"{len(failed)} failed tool spans for {bad} failed tool calls")
    return faults


SKUS = ["A1", "bad-2", "A3"]


@pytest.mark.parametrize("config", ["adk_otel", "lean"])
def test_concurrent_runs_are_three_traces(config):
    """Three runs at once on one runner, one with a tool that raises: three
    traces, nothing lost, the failed call an ERROR span with its exception."""
    assert _faults(_concurrent_runs(config, SKUS), SKUS) == []


def test_concurrent_runs_need_runs_kept_apart():
    # One run slot for all three: runs lose their spans or share a trace.
    assert _faults(_concurrent_runs("lean", SKUS, frozenset({"runs"})), SKUS) != []


# -- the app's callbacks see their layer's span ---------------------------------------


class _SeesToolError(BasePlugin):
    """A plugin after the tracer: what its tool error callback sees."""

    def __init__(self, seen: list[tuple[str, str, bool]]) -> None:
        super().__init__(name="sees_tool_error")
        self.seen = seen

    async def on_tool_error_callback(self, **_: Any) -> None:
        _note(self.seen, "on_tool_error")


def _note(seen: list[tuple[str, str, bool]], where: str) -> None:
    span = trace.get_current_span()
    seen.append((where, getattr(span, "name", "-"), span.is_recording()))


def _callbacks_see(config: str, off: frozenset[str] = frozenset()) -> list[tuple[str, str, bool]]:
    """What the current span is (name, still recording) in an agent's
    before and after callbacks, its before and after model callbacks (ADK
    restores its own context around a model's response: the span must be
    made current again), a tool's after callback, and a later plugin's tool
    error callback."""
    seen: list[tuple[str, str, bool]] = []

    def note(where: str) -> Callable[..., None]:
        return lambda *args, **kwargs: _note(seen, where)

    callbacks = {
        "before_agent_callback": note("before_agent"),
        "after_agent_callback": note("after_agent"),
        "before_model_callback": note("before_model"),
        "after_model_callback": note("after_model"),
        "after_tool_callback": note("after_tool"),
    }
    for path in ("ok", "error"):
        tool, sku, _ = PATHS[path]
        runner = _clerk(tool, sku, **callbacks)

        def drive(runner: InMemoryRunner = runner, path: str = path) -> Any:
            runner.plugin_manager.plugins.append(_SeesToolError(seen))  # after the tracer
            return _drive(runner, path)

        _spans(runner, config, drive, off)
    return sorted(set(seen))


CALLBACKS_SEE = [
    ("after_agent", "invoke_agent clerk", True),
    ("after_model", "generate_content scripted-model", True),
    ("after_tool", "execute_tool lookup", True),
    ("before_agent", "invoke_agent clerk", True),
    ("before_model", "generate_content scripted-model", True),
    ("on_tool_error", "execute_tool lookup", True),
]


@pytest.mark.parametrize("config", ["adk_otel", "lean"])
def test_callbacks_see_their_layers_span(config):
    assert _callbacks_see(config) == CALLBACKS_SEE


@pytest.mark.parametrize("piece", ["attach", "deferred"])
def test_callbacks_see_their_span_only_with_the_piece_that_keeps_it(piece):
    assert _callbacks_see("lean", frozenset({piece})) != CALLBACKS_SEE


# -- every span ended exactly once --------------------------------------------------


def _ends(
    config: str, path: str, monkeypatch: pytest.MonkeyPatch, off: frozenset[str] = frozenset()
) -> tuple[list[str], str | None]:
    """On one run ending as ``path`` says: what is wrong with the ends of
    the tracer's spans (each started span ended exactly once), and the
    invocation span's ``adk.outcome``."""
    calls: Counter[int] = Counter()
    end = SdkSpan.end

    def counted(span: SdkSpan, end_time: int | None = None) -> None:
        calls[span.context.span_id] += 1
        end(span, end_time)

    monkeypatch.setattr(SdkSpan, "end", counted)
    starts = _Starts()
    tool, sku, _ = PATHS[path]
    runner = _clerk(tool, sku)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(starts)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    if config == "adk_otel":
        adk_otel.instrument(runner, tracer_provider=provider, keep_adk_spans=True)
    else:
        lean.install(runner, provider, off)
    asyncio.run(_drive(runner, path))
    monkeypatch.undo()
    ours = {i: name for i, (name, scope) in starts.started.items() if scope != sc.ADK_SCOPE}
    faults = [f"{name} ended {calls[i]} times" for i, name in ours.items() if calls[i] != 1]
    outcome = next(
        (
            s.attributes.get(sc.ADK_OUTCOME)
            for s in exporter.get_finished_spans()
            if s.name == "invocation bench" and s.attributes
        ),
        None,
    )
    provider.shutdown()
    return faults, outcome


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("config", ["adk_otel", "lean"])
def test_every_span_ends_exactly_once(config, path, monkeypatch):
    faults, outcome = _ends(config, path, monkeypatch)
    assert faults == []
    assert outcome == PATHS[path][2]


def test_outcomes_need_their_checks(monkeypatch):
    # ADK runs after_run for a generator closed early, as for a clean end.
    assert _ends("lean", "closed", monkeypatch, frozenset({"outcomes"})) == ([], "ok")


def test_cancellation_needs_the_runner_wrapper(monkeypatch):
    faults, outcome = _ends("lean", "cancelled", monkeypatch, frozenset({"wrapper"}))
    if _ADK < (2, 13):
        # ADK 2.5 runs after_run in the cancelled task: its hooks end the run
        # without the wrapper, and see the cancellation.
        assert (faults, outcome) == ([], "cancelled")
    else:
        assert faults != [] and outcome is None  # no after_run: nothing ended the run
