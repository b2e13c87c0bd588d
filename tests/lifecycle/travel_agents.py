"""Apps that travel to another process (test_copies.py, test_agent_engine.py).

Imported by reference from a pickle, in a fresh process that has imported
nothing of adk-otel yet: so only ADK and the scripted model here, never the
lifecycle harness. A ``Workflow`` root with a function node and an agent node
(ADK's node tracing reaches adk-otel through what ``import adk_otel``
registers), and a plain agent root (what Agent Engine's ``AdkApp`` serves).

Imported as a plain agent's script imports: nothing here loads ADK's telemetry
module (``google.adk.workflow`` does, so :func:`flow_app` imports it), which ADK's
Runner then loads, after whatever set a tracer provider up in between (Agent
Engine's ``set_up()``).
"""

from __future__ import annotations

from typing import Any

from google.adk.agents import LlmAgent
from google.adk.apps import App

from adk_otel.testing.model import ScriptedModel, call, reply

APP = "shop"
CLERK_SPANS = {
    "invocation shop": 1,
    "invoke_agent clerk": 1,
    "generate_content scripted-model": 2,
    "execute_tool lookup": 1,
}
"""adk-otel's spans of one run of :func:`clerk`, by name."""
FLOW_SPANS = {"invoke_node prepare": 1, **CLERK_SPANS}
"""... and of one run of :func:`flow` (its invocation named after the app)."""


def lookup(sku: str) -> dict[str, Any]:
    """Stock level for a SKU."""
    return {"sku": sku, "stock": 3}


def prepare() -> dict[str, Any]:
    """Function node ahead of the clerk."""
    return {"sku": "A1"}


def clerk() -> LlmAgent:
    return LlmAgent(
        name="clerk",
        model=ScriptedModel(script=[call("lookup", {"sku": "A1"}), reply("in stock")]),
        tools=[lookup],
    )


def clerk_app(plugins: list[Any] | None = None) -> App:
    return App(name=APP, root_agent=clerk(), plugins=plugins or [])


def flow_app(plugins: list[Any] | None = None) -> App:
    from google.adk.workflow import Workflow

    workflow = Workflow(name="flow", edges=[("START", prepare, clerk())])
    return App(name=APP, root_agent=workflow, plugins=plugins or [])
