"""``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental``: the renamed
attributes change only for those who opt in, and then only the new form is
written."""

from __future__ import annotations

import pytest
from google.adk.agents import LlmAgent
from google.genai import types

from adk_otel import semconv as sc
from adk_otel.pipeline.stability import OPT_IN_ENV
from adk_otel.testing.model import reply

from .harness import RichUsageModel, ScriptedGemini, run


def clerk() -> LlmAgent:
    return LlmAgent(
        name="clerk",
        model=RichUsageModel(script=[reply("hi")]),
        generate_content_config=types.GenerateContentConfig(top_k=40),
    )


async def test_by_default_the_earlier_names_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(OPT_IN_ENV, raising=False)
    rec = await run(LlmAgent(name="clerk", model=ScriptedGemini(script=[reply("hi")])))
    assert rec.one("invoke_agent clerk").attributes[sc.GEN_AI_PROVIDER_NAME] == "gcp.gemini"
    rec = await run(clerk())
    model = rec.one("generate_content scripted-model").attributes
    assert model[sc.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS] == 40
    assert sc.GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS not in model
    top_k = model[sc.GEN_AI_REQUEST_TOP_K]
    assert isinstance(top_k, float) and top_k == 40.0
    invocation = rec.one("invocation shop").attributes
    assert invocation[sc.ADK_USAGE_CACHE_CREATION_INPUT_TOKENS] == 40
    assert sc.ADK_USAGE_CACHE_WRITE_INPUT_TOKENS not in invocation


@pytest.mark.parametrize(
    "value", ["gen_ai_latest_experimental", "http, gen_ai_latest_experimental"]
)
async def test_opting_in_writes_only_the_current_names(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv(OPT_IN_ENV, value)
    rec = await run(LlmAgent(name="clerk", model=ScriptedGemini(script=[reply("hi")])))
    agent = rec.one("invoke_agent clerk").attributes
    assert sc.GEN_AI_PROVIDER_NAME not in agent  # dropped from agent spans
    assert agent[sc.GEN_AI_REQUEST_MODEL] == "gemini-2.5-flash"
    model = rec.one("generate_content gemini-2.5-flash").attributes
    assert model[sc.GEN_AI_PROVIDER_NAME] == "gcp.gemini"  # model spans keep it

    rec = await run(clerk())
    model = rec.one("generate_content scripted-model").attributes
    assert model[sc.GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS] == 40
    assert sc.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS not in model
    top_k = model[sc.GEN_AI_REQUEST_TOP_K]
    assert isinstance(top_k, int) and top_k == 40
    for span in (rec.one("invocation shop"), rec.one("invoke_agent clerk")):
        assert span.attributes[sc.ADK_USAGE_CACHE_WRITE_INPUT_TOKENS] == 40
        assert sc.ADK_USAGE_CACHE_CREATION_INPUT_TOKENS not in span.attributes


async def test_other_opt_in_values_change_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(OPT_IN_ENV, "http,gen_ai")
    rec = await run(clerk())
    model = rec.one("generate_content scripted-model").attributes
    assert model[sc.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS] == 40
    assert isinstance(model[sc.GEN_AI_REQUEST_TOP_K], float)
