"""An agent that names its model by string (``LlmAgent(model="gemini-...")``,
the usual way) has its model resolved through ADK's registry on every read:
a new model object each time on ADK 2.5. adk-otel reads an agent's model for
every agent span and model call (the provider, the endpoint), so it keeps the
resolution per agent object: the attributes are those of the resolved model,
the registry is asked once per agent object and model name, and a changed
name is seen."""

from __future__ import annotations

import gc
from typing import Any, ClassVar

from google.adk.agents import LlmAgent
from google.adk.models.registry import LLMRegistry
from google.adk.runners import InMemoryRunner
from google.genai import types

from adk_otel import semconv as sc
from adk_otel.reading import attributes as attrs
from adk_otel.testing.model import ScriptedModel

from .harness import run


class RegisteredModel(ScriptedModel):
    """A scripted model ADK's registry builds from a name, counting each build."""

    built: ClassVar[list[str]] = []

    def __init__(self, **fields: Any) -> None:
        super().__init__(**fields)
        RegisteredModel.built.append(self.model)

    @classmethod
    def supported_models(cls) -> list[str]:
        return [r"adk-otel-registered-.*"]


LLMRegistry.register(RegisteredModel)


def lookup(sku: str) -> dict[str, Any]:
    """Stock level for a SKU."""
    return {"sku": sku, "stock": 3}


def clerk(name: str = "adk-otel-registered-a") -> LlmAgent:
    return LlmAgent(name="clerk", model=name, tools=[lookup])


async def builds_without_adk_otel(agent: LlmAgent, *messages: str) -> int:
    """How many model objects ADK's registry builds while ``agent`` handles
    ``messages`` with no tracing at all."""
    runner = InMemoryRunner(agent=agent, app_name="shop")
    session = await runner.session_service.create_session(app_name="shop", user_id="u")
    RegisteredModel.built.clear()
    for text in messages:
        async for _ in runner.run_async(
            user_id="u", session_id=session.id, new_message=types.UserContent(text)
        ):
            pass
    return len(RegisteredModel.built)


async def test_a_string_model_is_resolved_once_per_agent_and_its_spans_say_which() -> None:
    messages = ("stock of A1?", "and B2?")
    adk_alone = await builds_without_adk_otel(clerk(), *messages)

    agent = clerk()
    RegisteredModel.built.clear()
    recorded = await run(agent, *messages)
    assert recorded.error is None
    models = [s for s in recorded.spans if s.attributes.get(sc.ADK_SPAN_KIND) == "model"]
    agents = [s for s in recorded.spans if s.attributes.get(sc.ADK_SPAN_KIND) == "agent"]
    assert len(models) == 2 and len(agents) == 2
    for span in models + agents:
        assert span.attributes[sc.GEN_AI_REQUEST_MODEL] == "adk-otel-registered-a"
    # adk-otel's reads (an agent span and a model call per run) cost at most
    # one resolution per agent object, whatever ADK's own reads cost: one in
    # all on ADK 2.13, one a run on 2.5, which runs each invocation on an agent
    # object of its own (a new id every run).
    assert len(RegisteredModel.built) <= adk_alone + len(agents), (
        RegisteredModel.built,
        adk_alone,
    )

    # A changed name is resolved again.
    agent.model = "adk-otel-registered-b"
    resolved = attrs._agent_model(agent)
    assert isinstance(resolved, RegisteredModel)
    assert resolved.model == "adk-otel-registered-b"
    assert attrs._agent_model(agent) is resolved


def test_the_resolution_goes_with_its_agent() -> None:
    agent = clerk("adk-otel-registered-c")
    assert attrs._agent_model(agent) is attrs._agent_model(agent)
    key = id(agent)
    assert key in attrs._resolved_models
    del agent
    gc.collect()
    assert key not in attrs._resolved_models
