"""The two apps every set-up runs: a classic agent (a tool that opens a span
of the application's own, then a transfer) and a Workflow (a first node that
opens a span of its own, a node that fails once under RetryConfig, a last node)."""

from __future__ import annotations

from typing import Any

from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.workflow import FunctionNode, RetryConfig, Workflow
from opentelemetry import trace

from adk_otel.testing.model import ScriptedModel, call, reply

USER_SPAN = "the application's own span"


class FirstAttemptFails(RuntimeError):
    pass


def lookup(sku: str) -> dict[str, Any]:
    """Looks a product up."""
    with trace.get_tracer("the-application").start_as_current_span(USER_SPAN):
        return {"sku": sku, "stock": 3}


def prepare() -> dict[str, Any]:
    with trace.get_tracer("the-application").start_as_current_span(USER_SPAN):
        return {"prepared": True}


def failing_once() -> Any:
    tries = {"n": 0}

    def risky() -> dict[str, Any]:
        tries["n"] += 1
        if tries["n"] == 1:
            raise FirstAttemptFails("the first attempt fails")
        return {"done": True}

    return risky


def finish() -> dict[str, Any]:
    return {"finished": True}


def build(kind: str) -> App:
    if kind == "classic":
        helper = LlmAgent(
            name="helper",
            description="Answers after the clerk.",
            model=ScriptedModel(script=[reply("3 left")]),
        )
        clerk = LlmAgent(
            name="clerk",
            model=ScriptedModel(
                script=[
                    call("lookup", {"sku": "A1"}),
                    call("transfer_to_agent", {"agent_name": "helper"}),
                ]
            ),
            tools=[lookup],
            sub_agents=[helper],
        )
        return App(name="shop", root_agent=clerk)
    retry = RetryConfig(max_attempts=2, initial_delay=0, max_delay=0, jitter=0)
    flow = Workflow(
        name="flow",
        edges=[("START", prepare, FunctionNode(func=failing_once(), retry_config=retry), finish)],
    )
    return App(name="shop", root_agent=flow)
