"""What LLM-observability viewers make of adk-otel's spans.

Arize Phoenix and Langfuse classify each span from its attributes and add up
``gen_ai.usage.*`` over every span of a project or trace. The two classifiers
below are the documented rules of each, in their order of precedence
(Phoenix: ``openinference.span.kind``, else its ``gen_ai.*`` conversion in
``phoenix/trace/gen_ai/conversion.py``; Langfuse: its
``ObservationTypeMapper`` registry); ``benchmarks/phoenix_check.py`` checks the
same against a running Phoenix.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from google.adk.agents import LlmAgent, SequentialAgent

from adk_otel import semconv as sc
from adk_otel.testing.model import ScriptedModel, call, reply

from .harness import run


def lookup(sku: str) -> dict[str, Any]:
    """Stock level for a SKU."""
    return {"sku": sku, "stock": 3}


def phoenix_kind(attributes: Mapping[str, Any]) -> str:
    """Phoenix (arize-phoenix 20.x): its span kind for an OTLP span."""
    if sc.OPENINFERENCE_SPAN_KIND in attributes:
        return str(attributes[sc.OPENINFERENCE_SPAN_KIND])
    operation = attributes.get(sc.GEN_AI_OPERATION_NAME)
    by_operation = {
        "chat": "LLM",
        "text_completion": "LLM",
        "generate_content": "LLM",
        "embeddings": "EMBEDDING",
        "execute_tool": "TOOL",
        "retrieval": "RETRIEVER",
        "invoke_agent": "AGENT",
        "create_agent": "AGENT",
    }
    if operation is not None:
        return by_operation.get(str(operation), "UNKNOWN")
    if sc.GEN_AI_TOOL_CALL_ID in attributes or sc.GEN_AI_TOOL_NAME in attributes:
        return "TOOL"
    if {sc.GEN_AI_INPUT_MESSAGES, sc.GEN_AI_OUTPUT_MESSAGES, sc.GEN_AI_REQUEST_MODEL} & set(
        attributes
    ):
        return "LLM"
    return "UNKNOWN"


def langfuse_type(attributes: Mapping[str, Any]) -> str:
    """Langfuse: its observation type for an OTLP span (no Langfuse SDK attributes)."""
    by_kind = {
        "CHAIN": "CHAIN",
        "RETRIEVER": "RETRIEVER",
        "LLM": "GENERATION",
        "EMBEDDING": "EMBEDDING",
        "AGENT": "AGENT",
        "TOOL": "TOOL",
    }
    by_operation = {
        "chat": "GENERATION",
        "text_completion": "GENERATION",
        "generate_content": "GENERATION",
        "embeddings": "EMBEDDING",
        "invoke_agent": "AGENT",
        "create_agent": "AGENT",
        "execute_tool": "TOOL",
    }
    kind = by_kind.get(str(attributes.get(sc.OPENINFERENCE_SPAN_KIND)))
    operation = by_operation.get(str(attributes.get(sc.GEN_AI_OPERATION_NAME)))
    if kind or operation:
        return kind or operation or ""
    if sc.GEN_AI_TOOL_NAME in attributes or sc.GEN_AI_TOOL_CALL_ID in attributes:
        return "TOOL"
    if sc.GEN_AI_REQUEST_MODEL in attributes or sc.GEN_AI_RESPONSE_MODEL in attributes:
        return "GENERATION"
    return "SPAN"


EXPECTED = {
    # adk.span.kind -> (Phoenix span kind, Langfuse observation type)
    "invocation": ("CHAIN", "CHAIN"),
    "agent": ("AGENT", "AGENT"),
    "model": ("LLM", "GENERATION"),
    "tool": ("TOOL", "TOOL"),
}


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
    assert {kind for kind, _ in seen} == set(EXPECTED)
    for span in rec.spans:
        wanted = EXPECTED[str(span.attributes[sc.ADK_SPAN_KIND])]
        got = (phoenix_kind(span.attributes), langfuse_type(span.attributes))
        assert got == wanted, span.name
    invocation = rec.kind("invocation")[0].attributes
    # A run of an agent root is no GenAI operation of its own: the root agent's
    # invoke_agent span is its child, and is the one agent invocation.
    assert sc.GEN_AI_OPERATION_NAME not in invocation
    assert (sc.GEN_AI_INPUT_MESSAGES in invocation) is capture


@pytest.mark.parametrize("capture", [False, True], ids=["content-off", "content-on"])
async def test_viewer_token_totals_are_the_model_calls(capture: bool) -> None:
    """Phoenix's project total and Langfuse's trace total add up the usage of
    every span they read usage from: that is the model calls' usage only."""
    rec = await run(SequentialAgent(name="pipeline", sub_agents=[clerk()]), capture_content=capture)
    model_calls = rec.kind("model")
    assert len(model_calls) == 2
    per_call = sum(s.attributes[sc.GEN_AI_USAGE_INPUT_TOKENS] for s in model_calls)
    everywhere = sum(s.attributes.get(sc.GEN_AI_USAGE_INPUT_TOKENS, 0) for s in rec.spans)
    assert everywhere == per_call == 24
    llm_spans = [s for s in rec.spans if phoenix_kind(s.attributes) == "LLM"]
    assert llm_spans == model_calls
    # The roll-up on the invocation span is the same number under its own name.
    assert rec.kind("invocation")[0].attributes[sc.ADK_USAGE_INPUT_TOKENS] == per_call


async def test_workflow_nodes_are_steps_of_the_workflow() -> None:
    """Phoenix listed a workflow's node spans as UNKNOWN: each is a CHAIN (a step)."""
    from google.adk.runners import InMemoryRunner
    from google.adk.workflow import Workflow
    from google.genai import types

    import adk_otel

    from .harness import providers

    def prepare() -> dict[str, Any]:
        return {"sku": "A1"}

    tracer_provider, exporter, meter_provider, _ = providers()
    runner = adk_otel.instrument(
        InMemoryRunner(
            node=Workflow(name="flow", edges=[("START", prepare, clerk())]), app_name="shop"
        ),
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
    )
    session = await runner.session_service.create_session(app_name="shop", user_id="u")
    async for _ in runner.run_async(
        user_id="u", session_id=session.id, new_message=types.UserContent("hello")
    ):
        pass
    spans = exporter.get_finished_spans()
    nodes = [s for s in spans if (s.attributes or {}).get(sc.ADK_SPAN_KIND) == "node"]
    assert nodes, "the workflow ran no node span"
    for span in nodes:
        attributes = span.attributes or {}
        assert (phoenix_kind(attributes), langfuse_type(attributes)) == ("CHAIN", "CHAIN"), (
            span.name
        )
