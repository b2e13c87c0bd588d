"""What LLM-observability viewers make of adk-otel's spans.

Arize Phoenix, Langfuse and MLflow classify each span from its attributes and add up
token usage over the spans of a trace or project. ``viewers.py`` encodes each one's
rules as read from its source (the versions are named there); the tests run real ADK
apps and read adk-otel's spans with them. ``benchmarks/phoenix_check.py`` and
``benchmarks/viewer_runs.py`` check the same against a running Phoenix and MLflow.
"""

from __future__ import annotations

from typing import Any

import pytest
from google.adk.agents import LlmAgent, SequentialAgent

from adk_otel import semconv as sc
from adk_otel.testing.model import ScriptedModel, call, reply

from .harness import run
from .viewers import (
    langfuse_trace_input_tokens,
    langfuse_type,
    mlflow_trace_input_tokens,
    mlflow_type,
    phoenix_kind,
    phoenix_project_prompt_tokens,
    phoenix_trace_prompt_tokens,
)


def lookup(sku: str) -> dict[str, Any]:
    """Stock level for a SKU."""
    return {"sku": sku, "stock": 3}


EXPECTED = {
    # adk.span.kind -> (Phoenix span kind, Langfuse observation type, MLflow span type)
    "invocation": ("CHAIN", "CHAIN", "CHAIN"),
    "agent": ("AGENT", "AGENT", "AGENT"),
    "model": ("LLM", "GENERATION", "LLM"),
    "tool": ("TOOL", "TOOL", "TOOL"),
    "node": ("CHAIN", "CHAIN", "CHAIN"),  # a step of the workflow
}


def viewed(attributes: Any) -> tuple[str, str, str]:
    return phoenix_kind(attributes), langfuse_type(attributes), mlflow_type(attributes)


def clerk() -> LlmAgent:
    return LlmAgent(
        name="clerk",
        model=ScriptedModel(script=[call("lookup", {"sku": "A1"}), reply("3 left")]),
        tools=[lookup],
    )


@pytest.mark.parametrize("capture", [False, True], ids=["content-off", "content-on"])
async def test_each_layer_is_classified_as_users_expect(capture: bool) -> None:
    rec = await run(SequentialAgent(name="pipeline", sub_agents=[clerk()]), capture_content=capture)
    seen = {(s.attributes[sc.ADK_SPAN_KIND], s.name) for s in rec.spans}
    assert {kind for kind, _ in seen} == set(EXPECTED) - {"node"}
    for span in rec.spans:
        wanted = EXPECTED[str(span.attributes[sc.ADK_SPAN_KIND])]
        assert viewed(span.attributes) == wanted, span.name
    invocation = rec.kind("invocation")[0].attributes
    # A run of an agent root is no GenAI operation of its own: the root agent's
    # invoke_agent span is its child, and is the one agent invocation.
    assert sc.GEN_AI_OPERATION_NAME not in invocation
    assert (sc.GEN_AI_INPUT_MESSAGES in invocation) is capture


@pytest.mark.parametrize("capture", [False, True], ids=["content-off", "content-on"])
async def test_viewer_token_totals_are_the_model_calls(capture: bool) -> None:
    """Each viewer's token total of the run is the model calls' usage, once: the
    roll-ups on the agent and invocation spans are ``adk.usage.*``, which none reads."""
    rec = await run(SequentialAgent(name="pipeline", sub_agents=[clerk()]), capture_content=capture)
    model_calls = rec.kind("model")
    assert len(model_calls) == 2
    per_call = sum(s.attributes[sc.GEN_AI_USAGE_INPUT_TOKENS] for s in model_calls)
    assert per_call == 24
    assert phoenix_trace_prompt_tokens(rec.spans) == per_call
    assert phoenix_project_prompt_tokens(rec.spans) == per_call
    assert langfuse_trace_input_tokens(rec.spans) == per_call
    assert mlflow_trace_input_tokens(rec.spans) == per_call
    llm_spans = [s for s in rec.spans if phoenix_kind(s.attributes) == "LLM"]
    assert llm_spans == model_calls
    # The roll-up on the invocation span is the same number under its own name.
    assert rec.kind("invocation")[0].attributes[sc.ADK_USAGE_INPUT_TOKENS] == per_call


def outline() -> str:
    """Function node of the nested workflow."""
    return "outline"


def prepare() -> dict[str, Any]:
    """Function node: the order to look at."""
    return {"sku": "A1"}


def scripted_agent(name: str) -> LlmAgent:
    return LlmAgent(name=name, model=ScriptedModel(script=[reply(f"{name} done")]))


async def test_workflow_nodes_are_steps_of_the_workflow() -> None:
    """Phoenix 20.26 listed a workflow's node spans as UNKNOWN. Every node kind (a
    function node, a join, a nested workflow and its nodes) is a CHAIN, a step, in each
    viewer; every other layer of the run keeps its kind; and the tokens are the model
    calls', once."""
    from google.adk.runners import InMemoryRunner
    from google.adk.workflow import JoinNode, Workflow
    from google.genai import types

    import adk_otel

    from .harness import providers

    inner = Workflow(name="inner", edges=[("START", outline, scripted_agent("drafter"))])
    fan_out = (scripted_agent("north"), scripted_agent("south"))
    flow = Workflow(
        name="flow", edges=[("START", prepare, fan_out, JoinNode(name="merge"), inner, clerk())]
    )
    tracer_provider, exporter, meter_provider, _ = providers()
    runner = adk_otel.instrument(
        InMemoryRunner(node=flow, app_name="shop"),
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
    )
    session = await runner.session_service.create_session(app_name="shop", user_id="u")
    async for _ in runner.run_async(
        user_id="u", session_id=session.id, new_message=types.UserContent("hello")
    ):
        pass
    spans = exporter.get_finished_spans()
    nodes = {
        str(a[sc.ADK_NODE_NAME]): a
        for a in (s.attributes or {} for s in spans)
        if a.get(sc.ADK_SPAN_KIND) == "node"
    }
    kinds = {name: a[sc.ADK_NODE_KIND] for name, a in nodes.items()}
    assert kinds == {
        "prepare": "function",
        "merge": "join",
        "inner": "workflow",
        "outline": "function",
    }
    for span in spans:
        attributes = span.attributes or {}
        assert viewed(attributes) == EXPECTED[str(attributes[sc.ADK_SPAN_KIND])], span.name
    # The run's root is a workflow run: a CHAIN too, as the nested workflow is.
    (root,) = [s for s in spans if s.parent is None]
    assert viewed(root.attributes or {}) == ("CHAIN", "CHAIN", "CHAIN")
    model_calls = [s for s in spans if (s.attributes or {}).get(sc.ADK_SPAN_KIND) == "model"]
    assert len(model_calls) == 5  # north, south, drafter, clerk twice
    tokens = sum(int((s.attributes or {})[sc.GEN_AI_USAGE_INPUT_TOKENS]) for s in model_calls)
    assert phoenix_trace_prompt_tokens(spans) == phoenix_project_prompt_tokens(spans) == tokens
    assert langfuse_trace_input_tokens(spans) == mlflow_trace_input_tokens(spans) == tokens
