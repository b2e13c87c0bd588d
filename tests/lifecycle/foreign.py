"""Runs whose services and plugins start spans of their own ("foreign" spans:
neither ADK's nor adk-otel's), and the count of where those spans land.

Each set-up is an App whose runner's own work (session, artifact and memory
services), a plugin (ADK's ``AutoTracingPlugin``) or a workflow node starts
spans through the global tracer provider, as a database or HTTP client
instrumentation, a profiler or a framework's own tracing would. The same
set-up runs three ways: ADK alone (no adk-otel), ``adk_otel.instrument(runner)``
and the plugin in the App (``Runner(app=App(plugins=[AdkOtelPlugin()]))``,
the ``--extra_plugins`` path); :func:`landing` counts, for one run, the
foreign spans in the run's trace and the traces the run made.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.artifacts import InMemoryArtifactService
from google.adk.memory import InMemoryMemoryService
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools.preload_memory_tool import PreloadMemoryTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan

import adk_otel
from adk_otel.semconv import ADK_SCOPE, ADK_SPAN_KIND, INSTRUMENTATION_SCOPE
from adk_otel.testing.model import ScriptedModel, call, reply

APP = "shop"
STORE_SCOPE = "some.store.client"
"""The scope of the traced services' spans (a database or HTTP client's)."""
store = trace.get_tracer(STORE_SCOPE)
PATHS = ("adk", "runner", "app")
"""ADK alone; ``instrument(runner)``; the plugin in the App."""


class TracedSessionService(InMemorySessionService):
    """A session service whose every read and write starts a span, as a
    database or HTTP client instrumentation makes them."""

    async def get_session(self, **kwargs: Any) -> Any:
        with store.start_as_current_span("SELECT session"):
            return await super().get_session(**kwargs)

    async def append_event(self, session: Any, event: Any) -> Any:
        with store.start_as_current_span("INSERT event"):
            return await super().append_event(session, event)


class TracedArtifactService(InMemoryArtifactService):
    async def save_artifact(self, **kwargs: Any) -> Any:
        with store.start_as_current_span("PUT artifact"):
            return await super().save_artifact(**kwargs)

    async def load_artifact(self, **kwargs: Any) -> Any:
        with store.start_as_current_span("GET artifact"):
            return await super().load_artifact(**kwargs)


class TracedMemoryService(InMemoryMemoryService):
    async def search_memory(self, **kwargs: Any) -> Any:
        with store.start_as_current_span("SEARCH memory"):
            return await super().search_memory(**kwargs)


async def keep_note(text: str, tool_context: ToolContext) -> dict[str, Any]:
    """Saves the note as an artifact and reads it back."""
    await tool_context.save_artifact("note.txt", types.Part(text=text))
    await tool_context.load_artifact("note.txt")
    return {"kept": True}


def clerk(*, memory: bool = False) -> LlmAgent:
    tools: list[Any] = [keep_note]
    if memory:
        tools.append(PreloadMemoryTool())
    return LlmAgent(
        name="clerk",
        model=ScriptedModel(script=[call("keep_note", {"text": "hi"}), reply("noted")]),
        tools=tools,
    )


def _prepare(node_input: Any = None) -> dict[str, Any]:
    """A workflow's function node that calls a traced client itself."""
    with store.start_as_current_span("GET stock"):
        return {"sku": "A1"}


def workflow_root() -> Any:
    from google.adk.workflow import Workflow

    writer = LlmAgent(name="writer", model=ScriptedModel(script=[reply("written")]))
    return Workflow(name="flow", edges=[("START", _prepare, writer)])


@dataclass
class SetUp:
    """An App's root and services, and the plugins besides adk-otel's."""

    root: Callable[[], Any]
    sessions: Callable[[], Any] = TracedSessionService
    artifacts: Callable[[], Any] | None = None
    memory: Callable[[], Any] | None = None
    plugins: Callable[[], list[Any]] = list
    foreign_scopes: tuple[str, ...] = (STORE_SCOPE,)


def _auto_tracing() -> list[Any]:
    from google.adk.plugins.auto_tracing_plugin import AutoTracingPlugin

    return [AutoTracingPlugin()]


SETUPS: dict[str, SetUp] = {
    "session": SetUp(clerk),
    "artifact": SetUp(clerk, sessions=InMemorySessionService, artifacts=TracedArtifactService),
    "memory": SetUp(
        lambda: clerk(memory=True), sessions=InMemorySessionService, memory=TracedMemoryService
    ),
    "auto_tracing": SetUp(
        clerk,
        sessions=InMemorySessionService,
        plugins=_auto_tracing,
        foreign_scopes=("google.adk.plugins.auto_tracing_plugin",),
    ),
    "workflow": SetUp(workflow_root),
}


def runner(setup: SetUp, path: str) -> Runner:
    """The set-up's runner, traced the ``path`` way."""
    plugins = setup.plugins()
    if path == "app":
        plugins.append(adk_otel.AdkOtelPlugin())
    app = App(name=APP, root_agent=setup.root(), plugins=plugins)
    built = Runner(
        app=app,
        session_service=setup.sessions(),
        artifact_service=setup.artifacts() if setup.artifacts else InMemoryArtifactService(),
        memory_service=setup.memory() if setup.memory else None,
    )
    if path == "runner":
        adk_otel.instrument(built)
    return built


async def _run_once(built: Runner, text: str = "hello") -> list[Any]:
    """One run to its end (private: ``AutoTracingPlugin`` wraps the public
    functions of the agent's package, and the caller's span would hold the run)."""
    session = await built.session_service.create_session(app_name=APP, user_id="u1")
    return [
        event
        async for event in built.run_async(
            user_id="u1", session_id=session.id, new_message=types.UserContent(text)
        )
    ]


@dataclass
class Landing:
    """Where one run's spans landed."""

    foreign: int
    """Foreign spans the run made."""
    in_run: int
    """Of those, how many are under the run's root span."""
    traces: int
    """Distinct traces among all the spans the run made."""
    root: ReadableSpan
    """The run's root span (ADK's or adk-otel's)."""


def is_run_root(span: ReadableSpan) -> bool:
    scope = span.instrumentation_scope.name if span.instrumentation_scope else ""
    if scope == INSTRUMENTATION_SCOPE:
        return span.attributes is not None and span.attributes.get(ADK_SPAN_KIND) == "invocation"
    if scope == ADK_SCOPE:
        return span.name == "invocation" or (
            span.name.startswith("invoke_workflow")
            and span.attributes is not None
            and not span.attributes.get("gen_ai.workflow.nested")
            and not _has_adk_parent(span)
        )
    return False


_PARENTS: dict[int, ReadableSpan] = {}


def _has_adk_parent(span: ReadableSpan) -> bool:
    parent = _PARENTS.get(span.parent.span_id) if span.parent else None
    return parent is not None and parent.instrumentation_scope.name == ADK_SCOPE


def _under(span: ReadableSpan, root: ReadableSpan) -> bool:
    parent = span.parent
    while parent is not None:
        if parent.span_id == root.context.span_id:
            return True
        above = _PARENTS.get(parent.span_id)
        parent = above.parent if above is not None else None
    return False


def landing(spans: list[ReadableSpan], foreign_scopes: tuple[str, ...]) -> Landing:
    """Count one run's spans (``spans``: everything ended during the run)."""
    _PARENTS.clear()
    _PARENTS.update({s.context.span_id: s for s in spans})
    roots = [s for s in spans if is_run_root(s)]
    assert len(roots) == 1, [s.name for s in spans]
    root = roots[0]
    foreign = [s for s in spans if s.instrumentation_scope.name in foreign_scopes]
    return Landing(
        foreign=len(foreign),
        in_run=sum(1 for s in foreign if _under(s, root)),
        traces=len({s.context.trace_id for s in spans}),
        root=root,
    )
