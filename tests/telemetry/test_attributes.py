"""GenAI attributes on model, agent, invocation and tool spans, from real runs."""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from google.adk.agents import LlmAgent, SequentialAgent
from google.adk.tools import BaseTool, FunctionTool
from google.adk.tools.agent_tool import AgentTool
from google.adk.tools.long_running_tool import LongRunningFunctionTool

from adk_otel import semconv as sc
from adk_otel.reading import attributes as attrs
from adk_otel.testing.model import ScriptedModel, call, fail, reply, stream

from .harness import RichUsageModel, ScriptedGemini, run


def lookup(sku: str) -> dict[str, Any]:
    """Stock level for a SKU."""
    return {"sku": sku, "stock": 3}


def approve(amount: int) -> dict[str, Any]:
    """Ask a human to approve a refund."""
    return {"status": "pending"}


# -- model-call spans ----------------------------------------------------------------


async def test_gemini_class_is_gcp_gemini_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GOOGLE_GENAI_USE_VERTEXAI", raising=False)
    monkeypatch.delenv("GOOGLE_GENAI_USE_ENTERPRISE", raising=False)
    agent = LlmAgent(name="clerk", model=ScriptedGemini(script=[reply("hi")]))
    rec = await run(agent)
    model = rec.one("generate_content gemini-2.5-flash")
    assert model.attributes[sc.GEN_AI_PROVIDER_NAME] == "gcp.gemini"
    assert rec.one("invoke_agent clerk").attributes[sc.GEN_AI_PROVIDER_NAME] == "gcp.gemini"


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"GOOGLE_GENAI_USE_VERTEXAI": "true"}, "gcp.vertex_ai"),
        ({"GOOGLE_GENAI_USE_VERTEXAI": "1"}, "gcp.vertex_ai"),
        ({"GOOGLE_GENAI_USE_VERTEXAI": "false"}, "gcp.gemini"),
        # The newer variable wins, as in google-genai.
        ({"GOOGLE_GENAI_USE_VERTEXAI": "true", "GOOGLE_GENAI_USE_ENTERPRISE": "0"}, "gcp.gemini"),
        ({"GOOGLE_GENAI_USE_ENTERPRISE": "TRUE"}, "gcp.vertex_ai"),
    ],
)
async def test_gemini_on_vertex_follows_the_backend_variables(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], expected: str
) -> None:
    monkeypatch.delenv("GOOGLE_GENAI_USE_VERTEXAI", raising=False)
    monkeypatch.delenv("GOOGLE_GENAI_USE_ENTERPRISE", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    agent = LlmAgent(name="clerk", model=ScriptedGemini(script=[reply("hi")]))
    rec = await run(agent)
    assert rec.one("generate_content gemini-2.5-flash").attributes[sc.GEN_AI_PROVIDER_NAME] == (
        expected
    )


async def test_one_agent_follows_the_backend_variables_between_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A span's start attributes are built once per configuration (reading.attributes,
    # Opening): a Google model's are built again when the variables they come from change.
    monkeypatch.delenv("GOOGLE_GENAI_USE_VERTEXAI", raising=False)
    monkeypatch.delenv("GOOGLE_GENAI_USE_ENTERPRISE", raising=False)
    agent = LlmAgent(name="clerk", model=ScriptedGemini(script=[reply("hi"), reply("again")]))
    first = await run(agent)
    monkeypatch.setenv("GOOGLE_GENAI_USE_VERTEXAI", "true")
    second = await run(agent)
    for rec, provider in ((first, "gcp.gemini"), (second, "gcp.vertex_ai")):
        assert rec.one("invoke_agent clerk").attributes[sc.GEN_AI_PROVIDER_NAME] == provider
        model_span = rec.one("generate_content gemini-2.5-flash")
        assert model_span.attributes[sc.GEN_AI_PROVIDER_NAME] == provider


async def test_a_model_renamed_in_place_is_another_model_on_the_agent_span() -> None:
    model = ScriptedModel(script=[reply("hi"), reply("again")])
    agent = LlmAgent(name="clerk", model=model)
    first = await run(agent)
    model.model = "renamed-model"
    second = await run(agent)
    assert first.one("invoke_agent clerk").attributes[sc.GEN_AI_REQUEST_MODEL] == "scripted-model"
    assert second.one("invoke_agent clerk").attributes[sc.GEN_AI_REQUEST_MODEL] == "renamed-model"
    assert second.one("generate_content renamed-model")


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("scripted-model", None),
        # A class adk-otel does not know may serve any name from anywhere:
        # a bare model name says nothing about where it runs...
        ("gemini-2.5-flash", None),
        ("claude-sonnet-4", None),
        # ...nor an owner prefix outside the registry (a Hugging Face style name)...
        ("my-org/finetune-7b", None),
        # ...but a registry provider prefix names the provider outright.
        ("openai/gpt-4o", "openai"),
        ("bedrock/anthropic.claude-3", "aws.bedrock"),
    ],
)
async def test_unknown_model_class_provider_only_from_a_named_provider(
    model: str, expected: str | None
) -> None:
    agent = LlmAgent(name="clerk", model=ScriptedModel(model=model, script=[reply("hi")]))
    rec = await run(agent)
    for span in (rec.one(f"generate_content {model}"), rec.one("invoke_agent clerk")):
        assert span.attributes.get(sc.GEN_AI_PROVIDER_NAME) == expected
        assert sc.SERVER_ADDRESS not in span.attributes
        assert sc.SERVER_PORT not in span.attributes


async def test_model_span_request_response_and_finish_reason() -> None:
    rec = await run(LlmAgent(name="clerk", model=ScriptedModel(script=[reply("hi")])))
    span = rec.one("generate_content scripted-model")
    assert span.attributes[sc.GEN_AI_REQUEST_MODEL] == "scripted-model"
    assert span.attributes[sc.GEN_AI_RESPONSE_MODEL] == "scripted-model-001"
    assert span.attributes[sc.GEN_AI_RESPONSE_FINISH_REASONS] == ("stop",)
    assert span.attributes[sc.GEN_AI_USAGE_INPUT_TOKENS] == 12
    assert span.attributes[sc.GEN_AI_USAGE_OUTPUT_TOKENS] == 7


async def test_token_usage_details_come_from_the_final_response_only() -> None:
    agent = LlmAgent(name="clerk", model=RichUsageModel(script=[stream("a", "b", "c")]))
    rec = await run(agent, streaming=True)
    span = rec.one("generate_content scripted-model")
    assert span.attributes[sc.ADK_MODEL_CHUNKS] == 3  # partial chunks were seen...
    # ...but only the final response's usage counts: prompt + tool-use prompt,
    # candidates + thoughts, and the cached / reasoning subsets.
    assert span.attributes[sc.GEN_AI_USAGE_INPUT_TOKENS] == 103
    assert span.attributes[sc.GEN_AI_USAGE_OUTPUT_TOKENS] == 25
    assert span.attributes[sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] == 60
    assert span.attributes[sc.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS] == 5
    assert span.attributes[sc.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS] == 40
    agent_span = rec.one("invoke_agent clerk")
    assert agent_span.attributes[sc.ADK_USAGE_INPUT_TOKENS] == 103
    assert agent_span.attributes[sc.ADK_USAGE_CACHE_READ_INPUT_TOKENS] == 60


async def test_failed_model_call_reports_no_usage() -> None:
    agent = LlmAgent(name="clerk", model=ScriptedModel(script=[fail(RuntimeError("down"))]))
    rec = await run(agent)
    span = rec.one("generate_content scripted-model")
    assert sc.GEN_AI_USAGE_INPUT_TOKENS not in span.attributes
    agent_span = rec.one("invoke_agent clerk")
    assert agent_span.attributes[sc.ADK_MODEL_CALL_COUNT] == 1
    assert sc.ADK_USAGE_INPUT_TOKENS not in agent_span.attributes


# -- agent and invocation spans: totals and counts --------------------------------------


async def test_agent_and_invocation_totals_and_counts() -> None:
    agent = LlmAgent(
        name="clerk",
        description="Answers stock questions.",
        model=ScriptedModel(script=[call("lookup", {"sku": "A1"}), reply("in stock")]),
        tools=[lookup],
    )
    rec = await run(agent)
    agent_span = rec.one("invoke_agent clerk")
    assert agent_span.attributes[sc.GEN_AI_AGENT_DESCRIPTION] == "Answers stock questions."
    assert agent_span.attributes[sc.GEN_AI_REQUEST_MODEL] == "scripted-model"
    for span in (agent_span, rec.one("invocation shop")):
        assert span.attributes[sc.ADK_MODEL_CALL_COUNT] == 2
        assert span.attributes[sc.ADK_TOOL_CALL_COUNT] == 1
        assert span.attributes[sc.ADK_USAGE_INPUT_TOKENS] == 24
        assert span.attributes[sc.ADK_USAGE_OUTPUT_TOKENS] == 14
        # Not as gen_ai.usage.*: a backend summing usage over spans would count it twice.
        assert not any(key.startswith("gen_ai.usage.") for key in span.attributes)
    # Totals belong to agent and invocation spans, not to the calls themselves.
    assert sc.ADK_MODEL_CALL_COUNT not in rec.one("execute_tool lookup").attributes


async def test_workflow_parent_sums_its_sub_agents() -> None:
    first = LlmAgent(name="first", model=ScriptedModel(script=[reply("a")]))
    second = LlmAgent(
        name="second",
        model=ScriptedModel(script=[call("lookup", {"sku": "B"}), reply("b")]),
        tools=[lookup],
    )
    rec = await run(SequentialAgent(name="pipeline", sub_agents=[first, second]))
    assert rec.one("invoke_agent first").attributes[sc.ADK_MODEL_CALL_COUNT] == 1
    assert rec.one("invoke_agent second").attributes[sc.ADK_MODEL_CALL_COUNT] == 2
    pipeline = rec.one("invoke_agent pipeline")
    assert pipeline.attributes[sc.ADK_MODEL_CALL_COUNT] == 3
    assert pipeline.attributes[sc.ADK_TOOL_CALL_COUNT] == 1
    assert pipeline.attributes[sc.ADK_USAGE_OUTPUT_TOKENS] == 21
    # A workflow agent has no model of its own.
    assert sc.GEN_AI_REQUEST_MODEL not in pipeline.attributes


def clerk_with_helper() -> LlmAgent:
    """A clerk whose tool is a helper agent (AgentTool) that calls lookup."""
    helper = LlmAgent(
        name="helper",
        description="Looks things up.",
        model=ScriptedModel(script=[call("lookup", {"sku": "C"}), reply("found")]),
        tools=[lookup],
    )
    return LlmAgent(
        name="clerk",
        model=ScriptedModel(script=[call("helper", {"request": "C?"}), reply("done")]),
        tools=[AgentTool(helper)],
    )


async def test_agent_tool_runs_roll_up_into_the_caller() -> None:
    rec = await run(clerk_with_helper())
    nested, outer = sorted(rec.kind("invocation"), key=lambda s: s.end_time or 0)
    assert nested.attributes[sc.ADK_MODEL_CALL_COUNT] == 2
    assert rec.one("invoke_agent helper").attributes[sc.ADK_TOOL_CALL_COUNT] == 1
    # The caller's agent and invocation spans include the nested run: 2 + 2
    # model calls, the AgentTool call plus the nested lookup.
    for span in (rec.one("invoke_agent clerk"), outer):
        assert span.attributes[sc.ADK_MODEL_CALL_COUNT] == 4
        assert span.attributes[sc.ADK_TOOL_CALL_COUNT] == 2
        assert span.attributes[sc.ADK_USAGE_INPUT_TOKENS] == 48


async def test_totals_are_written_on_spans_adk_never_closed() -> None:
    # After a transfer the source agent gets no after_agent hook; adk-otel
    # ends its span as the target starts, and it still carries its numbers.
    target = LlmAgent(name="target", model=ScriptedModel(script=[reply("hi")]))
    source = LlmAgent(
        name="source",
        model=ScriptedModel(script=[call("transfer_to_agent", {"agent_name": "target"})]),
        sub_agents=[target],
    )
    rec = await run(source)
    span = rec.one("invoke_agent source")
    assert span.attributes[sc.ADK_CLOSE_REASON] == "transferred"
    # Its own call only: the target runs after it, as its sibling.
    assert span.attributes[sc.ADK_MODEL_CALL_COUNT] == 1
    assert span.attributes[sc.ADK_TOOL_CALL_COUNT] == 1
    assert span.attributes[sc.ADK_USAGE_INPUT_TOKENS] == 12
    assert rec.one("invocation shop").attributes[sc.ADK_MODEL_CALL_COUNT] == 2


async def test_usage_summed_over_every_span_equals_the_model_calls() -> None:
    """What Langfuse and Phoenix do with gen_ai.usage.*: add it up over all
    spans. That sum is the model calls' usage, not a multiple of it."""
    rec = await run(SequentialAgent(name="pipeline", sub_agents=[clerk_with_helper()]))
    everywhere = sum(s.attributes.get(sc.GEN_AI_USAGE_INPUT_TOKENS, 0) for s in rec.spans)
    model_calls = rec.kind("model")
    assert len(model_calls) == 4
    assert everywhere == sum(s.attributes[sc.GEN_AI_USAGE_INPUT_TOKENS] for s in model_calls) == 48


# -- tool spans ----------------------------------------------------------------------


async def test_tool_types_descriptions_and_long_running() -> None:
    helper = LlmAgent(name="helper", description="Helps.", model=ScriptedModel())
    agent = LlmAgent(
        name="clerk",
        model=ScriptedModel(
            script=[
                call("lookup", {"sku": "A"}),
                call("helper", {"request": "x"}),
                call("approve", {"amount": 5}),
                reply("done"),
            ]
        ),
        tools=[lookup, AgentTool(helper), LongRunningFunctionTool(approve)],
    )
    rec = await run(agent)
    function = rec.one("execute_tool lookup").attributes
    assert function[sc.GEN_AI_TOOL_TYPE] == "function"
    assert function[sc.GEN_AI_TOOL_DESCRIPTION] == "Stock level for a SKU."
    assert sc.ADK_TOOL_LONG_RUNNING not in function
    assert rec.one("execute_tool helper").attributes[sc.GEN_AI_TOOL_TYPE] == "agent"
    assert rec.one("execute_tool helper").attributes[sc.GEN_AI_TOOL_DESCRIPTION] == "Helps."
    long_running = rec.one("execute_tool approve").attributes
    assert long_running[sc.GEN_AI_TOOL_TYPE] == "function"
    assert long_running[sc.ADK_TOOL_LONG_RUNNING] is True


def _tool_class(module: str, name: str) -> type:
    # Optional extras (mcp, discoveryengine) are test dependencies: an import error fails.
    return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize(
    ("module", "name", "expected"),
    [
        ("google.adk.tools.function_tool", "FunctionTool", "function"),
        ("google.adk.tools.transfer_to_agent_tool", "TransferToAgentTool", "function"),
        ("google.adk.tools.agent_tool", "AgentTool", "agent"),
        ("google.adk.tools.google_search_agent_tool", "GoogleSearchAgentTool", "agent"),
        ("google.adk.tools.load_memory_tool", "LoadMemoryTool", "datastore"),
        ("google.adk.tools.preload_memory_tool", "PreloadMemoryTool", "datastore"),
        ("google.adk.tools.vertex_ai_search_tool", "VertexAiSearchTool", "datastore"),
        ("google.adk.tools.retrieval.base_retrieval_tool", "BaseRetrievalTool", "datastore"),
        (
            "google.adk.tools.discovery_engine_search_tool",
            "DiscoveryEngineSearchTool",
            "datastore",
        ),
        (
            "google.adk.tools.openapi_tool.openapi_spec_parser.rest_api_tool",
            "RestApiTool",
            "extension",
        ),
        ("google.adk.tools.google_tool", "GoogleTool", "extension"),
        ("google.adk.tools.mcp_tool.mcp_tool", "McpTool", "extension"),
    ],
)
def test_tool_type_of_adk_tool_classes(module: str, name: str, expected: str) -> None:
    cls = _tool_class(module, name)
    subclass = type(f"My{name}", (cls,), {})  # user subclasses inherit the type
    for klass in (cls, subclass):
        assert attrs.tool_type_of(klass) == expected


def test_custom_base_tool_is_a_function() -> None:
    class Custom(BaseTool):
        pass

    assert attrs.tool_type(Custom(name="c", description="d")) == "function"
    assert attrs.tool_type(FunctionTool(lookup)) == "function"


# -- provider from a model name alone ---------------------------------------------------


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("openai/gpt-4o", "openai"),
        ("anthropic/claude-sonnet-4", "anthropic"),
        ("bedrock/anthropic.claude-3", "aws.bedrock"),
        ("vertex_ai/gemini-2.5-pro", "gcp.vertex_ai"),
        ("azure/gpt-4o", "azure.ai.openai"),
        ("mistral/mistral-large", "mistral_ai"),
        ("xai/grok-2", "x_ai"),
        ("ollama_chat/llama3", "ollama_chat"),  # outside the registry: passed through
        ("claude-3-5-sonnet-v2@20241022", "anthropic"),
        ("gemini-2.5-flash", "gcp.gemini"),
        ("projects/p/locations/l/publishers/google/models/gemini-2.5-flash", "gcp.gemini"),
        ("gpt-4o", None),
        ("", None),
    ],
)
def test_provider_from_model_name(
    monkeypatch: pytest.MonkeyPatch, model: str, expected: str | None
) -> None:
    monkeypatch.delenv("GOOGLE_GENAI_USE_VERTEXAI", raising=False)
    monkeypatch.delenv("GOOGLE_GENAI_USE_ENTERPRISE", raising=False)
    assert attrs.provider_name(None, model) == expected


@pytest.mark.parametrize(
    ("module", "name", "model", "expected"),
    [
        ("google.adk.models.lite_llm", "LiteLlm", "openai/gpt-4o", "openai"),
        ("google.adk.models.lite_llm", "LiteLlm", "groq/llama3-70b", "groq"),
        ("google.adk.models.anthropic_llm", "Claude", "claude-3-5-sonnet-v2@20241022", "anthropic"),
        ("google.adk.models.anthropic_llm", "AnthropicLlm", "claude-sonnet-4", "anthropic"),
    ],
)
def test_provider_from_optional_model_classes(
    module: str, name: str, model: str, expected: str
) -> None:
    """litellm and anthropic are test dependencies: an import error fails."""
    cls = getattr(importlib.import_module(module), name)
    assert attrs.provider_name(cls(model=model), model) == expected


async def test_model_spans_carry_the_request_parameters() -> None:
    from google.genai import types

    config = types.GenerateContentConfig(
        temperature=0.25,
        max_output_tokens=256,
        top_p=0.9,
        top_k=40,
        stop_sequences=["END"],
        seed=7,
        presence_penalty=0.1,
        frequency_penalty=0.2,
        response_mime_type="application/json",
    )
    agent = LlmAgent(
        name="clerk", model=ScriptedModel(script=[reply("{}")]), generate_content_config=config
    )
    rec = await run(agent, streaming=True)
    span = rec.one("generate_content scripted-model")
    assert {k: v for k, v in span.attributes.items() if k.startswith("gen_ai.request.")} == {
        sc.GEN_AI_REQUEST_MODEL: "scripted-model",
        sc.GEN_AI_REQUEST_TEMPERATURE: 0.25,
        sc.GEN_AI_REQUEST_MAX_TOKENS: 256,
        sc.GEN_AI_REQUEST_TOP_P: 0.9,
        sc.GEN_AI_REQUEST_TOP_K: 40.0,
        sc.GEN_AI_REQUEST_STOP_SEQUENCES: ("END",),
        sc.GEN_AI_REQUEST_SEED: 7,
        sc.GEN_AI_REQUEST_PRESENCE_PENALTY: 0.1,
        sc.GEN_AI_REQUEST_FREQUENCY_PENALTY: 0.2,
        sc.GEN_AI_REQUEST_STREAM: True,
    }
    assert span.attributes[sc.GEN_AI_OUTPUT_TYPE] == "json"
    assert (
        span.attributes[sc.GEN_AI_CONVERSATION_ID]
        == rec.one("invocation shop").attributes[sc.GEN_AI_CONVERSATION_ID]
    )


async def test_a_plain_request_has_no_parameters_and_no_stream_flag() -> None:
    rec = await run(LlmAgent(name="clerk", model=ScriptedModel(script=[reply("hi")])))
    span = rec.one("generate_content scripted-model")
    assert [k for k in span.attributes if k.startswith("gen_ai.request.")] == [
        sc.GEN_AI_REQUEST_MODEL
    ]
    assert sc.GEN_AI_OUTPUT_TYPE not in span.attributes
