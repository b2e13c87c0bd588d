"""Small real agents, tools and plugins the lifecycle scenarios share."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from google.adk.agents import BaseAgent, LlmAgent
from google.adk.agents.invocation_context import InvocationContext
from google.adk.events import Event
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.runners import InMemoryRunner
from google.adk.tools.tool_context import ToolContext
from google.genai import types

import adk_otel
from adk_otel.testing.model import ScriptedModel, Step, reply

from .harness import APP


class ToolFailed(RuntimeError):
    pass


class AgentCrashed(RuntimeError):
    pass


def lookup(sku: str) -> dict[str, Any]:
    """Stock level for a SKU; raises for the SKU 'bad'."""
    if sku == "bad":
        raise ToolFailed(f"no such sku: {sku}")
    return {"sku": sku, "stock": 3}


def stop_here(tool_context: ToolContext) -> dict[str, Any]:
    """Ends the whole invocation after this tool (as ADK's own auth and
    confirmation flows do; there is no public setter)."""
    tool_context._invocation_context.end_invocation = True
    return {"stopped": True}


def clerk(*script: Step, name: str = "clerk", tools: list[Any] | None = None) -> LlmAgent:
    return LlmAgent(
        name=name,
        model=ScriptedModel(script=list(script) or [reply("ok")]),
        tools=[lookup] if tools is None else tools,
    )


class CrashingAgent(BaseAgent):
    """A custom agent whose body raises."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        raise AgentCrashed(f"{self.name} crashed")
        yield  # pragma: no cover - makes this an async generator


class RaisingPlugin(BasePlugin):
    """Raises in the named hook."""

    def __init__(self, hook: str) -> None:
        super().__init__(name=f"raises_in_{hook}")
        self.hook = hook

    async def before_run_callback(self, **kw: Any) -> None:
        if self.hook == "before_run":
            raise RuntimeError("plugin failed in before_run")

    async def before_agent_callback(self, **kw: Any) -> None:
        if self.hook == "before_agent":
            raise RuntimeError("plugin failed in before_agent")

    async def on_event_callback(self, **kw: Any) -> None:
        if self.hook == "on_event":
            raise RuntimeError("plugin failed in on_event")


class AnsweringPlugin(BasePlugin):
    """Short-circuits ADK from the named hook with a canned answer."""

    def __init__(self, hook: str) -> None:
        super().__init__(name=f"answers_in_{hook}")
        self.hook = hook

    async def before_run_callback(self, **kw: Any) -> types.Content | None:
        return types.ModelContent("canned") if self.hook == "before_run" else None

    async def before_agent_callback(self, **kw: Any) -> types.Content | None:
        return types.ModelContent("canned") if self.hook == "before_agent" else None

    async def before_model_callback(self, **kw: Any) -> Any:
        if self.hook == "before_model":
            from google.adk.models.llm_response import LlmResponse

            return LlmResponse(content=types.ModelContent("canned"))
        return None

    async def on_tool_error_callback(self, **kw: Any) -> dict[str, Any] | None:
        return {"recovered": True} if self.hook == "on_tool_error" else None


def runner_for(agent: BaseAgent, *plugins: BasePlugin, instrument: bool = True) -> InMemoryRunner:
    runner = InMemoryRunner(agent=agent, app_name=APP, plugins=list(plugins))
    return adk_otel.instrument(runner) if instrument else runner


def unwrap_group(error: BaseException | None) -> BaseException | None:
    """The single exception inside an ExceptionGroup (ADK 2.5 Parallel)."""
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error
