"""What LLM viewers group and show by: ``user.id`` on the invocation span
(Phoenix, Langfuse and MLflow read it; written plain, hashed or not at all)
and, with content capture on, each ``invoke_agent`` span's input and output
messages (the GenAI conventions allow both on agent spans)."""

from __future__ import annotations

import hashlib
import json
import logging

import pytest
from google.adk.agents import LlmAgent, SequentialAgent
from google.genai import types

import adk_otel
from adk_otel import semconv as sc
from adk_otel.reading.content import CAPTURE_ENV
from adk_otel.reading.user_id import ENV
from adk_otel.testing.model import ScriptedModel, call, reply

from .harness import APP, USER, Recorded, run

HASHED = hashlib.sha256(USER.encode()).hexdigest()


def lookup(sku: str) -> dict[str, str]:
    """Stock level for a SKU."""
    return {"sku": sku, "stock": "3"}


def clerk(name: str = "clerk", answer: str = "in stock") -> LlmAgent:
    return LlmAgent(
        name=name,
        model=ScriptedModel(script=[call("lookup", {"sku": "A1"}), reply(answer)]),
        tools=[lookup],
    )


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.delenv(CAPTURE_ENV, raising=False)


def user_fields(rec: Recorded) -> list[dict[str, object]]:
    """``user.id`` / ``adk.user.id`` of every span that has either."""
    keys = (sc.USER_ID, sc.ADK_USER_ID)
    found = [{k: s.attributes[k] for k in keys if k in s.attributes} for s in rec.spans]
    return [f for f in found if f]


# -- user.id ------------------------------------------------------------------------------


async def test_the_invocation_span_names_the_user_where_viewers_read_it() -> None:
    rec = await run(clerk())
    invocation = rec.one("invocation shop")
    assert invocation.attributes[sc.USER_ID] == USER
    assert invocation.attributes[sc.ADK_USER_ID] == USER
    assert user_fields(rec) == [{sc.USER_ID: USER, sc.ADK_USER_ID: USER}], "once, on the root"


@pytest.mark.parametrize("where", ["keyword", "environment"])
async def test_hash_keeps_one_value_per_user_without_the_id(
    monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    if where == "environment":
        monkeypatch.setenv(ENV, " HASH ")
        rec = await run(clerk(), "one", "two")
    else:
        rec = await run(clerk(), "one", "two", user_id="hash")
    assert user_fields(rec) == [{sc.USER_ID: HASHED, sc.ADK_USER_ID: HASHED}] * 2
    assert not any(str(v) == USER for s in rec.spans for v in s.attributes.values())


@pytest.mark.parametrize("where", ["keyword", "environment"])
async def test_off_writes_no_user_id(monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    if where == "environment":
        monkeypatch.setenv(ENV, "off")
        rec = await run(clerk())
    else:
        rec = await run(clerk(), user_id="off")
    assert len(rec.spans) >= 4
    assert user_fields(rec) == []


async def test_the_keyword_overrides_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "off")
    rec = await run(clerk(), user_id="plain")
    assert user_fields(rec) == [{sc.USER_ID: USER, sc.ADK_USER_ID: USER}]


async def test_an_unknown_value_warns_once_and_writes_no_user_id(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(ENV, "hashed-please")
    with caplog.at_level(logging.WARNING, logger="adk_otel"):
        rec = await run(clerk(), "one", "two")
    assert user_fields(rec) == [], "a typo in a privacy switch must not reveal ids"
    warnings = [r.getMessage() for r in caplog.records if ENV in r.getMessage()]
    assert len(warnings) == 1 and "\n" not in warnings[0]
    assert "plain, hash, off" in warnings[0]


# -- invoke_agent messages ---------------------------------------------------------------


def messages(span: object, key: str) -> list[dict[str, object]]:
    return json.loads(span.attributes[key])  # type: ignore[attr-defined]


async def test_agent_spans_carry_their_input_and_output_messages() -> None:
    pipeline = SequentialAgent(
        name="pipeline", sub_agents=[clerk("picker", "picked A1"), clerk("packer", "packed A1")]
    )
    rec = await run(pipeline, "ship A1", capture_content=True)
    user = [{"role": "user", "parts": [{"type": "text", "content": "ship A1"}]}]
    for name, answer in (("picker", "picked A1"), ("packer", "packed A1")):
        span = rec.one(f"invoke_agent {name}")
        assert messages(span, sc.GEN_AI_INPUT_MESSAGES) == user
        assert messages(span, sc.GEN_AI_OUTPUT_MESSAGES) == [
            {
                "role": "assistant",
                "parts": [{"type": "text", "content": answer}],
                "finish_reason": "stop",
            }
        ], "the agent's own final response, not a sibling's"
    outer = rec.one("invoke_agent pipeline")
    assert messages(outer, sc.GEN_AI_INPUT_MESSAGES) == user
    assert sc.GEN_AI_OUTPUT_MESSAGES not in outer.attributes, "it wrote no response itself"


async def test_agent_messages_go_into_the_content_event_in_event_mode() -> None:
    rec = await run(clerk(), "is A1 there", capture_content="EVENT_ONLY")
    agent = rec.one("invoke_agent clerk")
    assert sc.GEN_AI_INPUT_MESSAGES not in agent.attributes
    (event,) = agent.events
    assert event.name == sc.ADK_CONTENT_EVENT
    assert "is A1 there" in event.attributes[sc.GEN_AI_INPUT_MESSAGES]
    assert "in stock" in event.attributes[sc.GEN_AI_OUTPUT_MESSAGES]


async def test_agent_spans_carry_no_messages_with_capture_off() -> None:
    rec = await run(clerk(), "is A1 there")
    keys = {sc.GEN_AI_INPUT_MESSAGES, sc.GEN_AI_OUTPUT_MESSAGES}
    assert not keys & set(rec.one("invoke_agent clerk").attributes)
    assert not rec.one("invoke_agent clerk").events


async def test_instrument_again_changes_the_user_id_mode() -> None:
    rec = await run(clerk(), "one")
    assert user_fields(rec) == [{sc.USER_ID: USER, sc.ADK_USER_ID: USER}]
    runner = rec.runner
    assert runner is not None
    adk_otel.instrument(runner, user_id="hash")  # the same plugin, reconfigured
    session = await runner.session_service.create_session(app_name=APP, user_id=USER)
    async for _ in runner.run_async(
        user_id=USER, session_id=session.id, new_message=types.UserContent("two")
    ):
        pass
    assert user_fields(rec) == [
        {sc.USER_ID: USER, sc.ADK_USER_ID: USER},
        {sc.USER_ID: HASHED, sc.ADK_USER_ID: HASHED},
    ]


# -- OpenInference's input and output (Phoenix's and MLflow's trace lists) -------------


async def test_the_run_shows_its_input_and_output_where_phoenix_reads_them() -> None:
    rec = await run(clerk(), "is A1 there", capture_content=True)
    for name in ("invocation shop", "invoke_agent clerk"):
        span = rec.one(name)
        assert span.attributes[sc.OI_INPUT_VALUE] == "is A1 there", name
        assert span.attributes[sc.OI_INPUT_MIME_TYPE] == "text/plain"
        assert span.attributes[sc.OI_OUTPUT_VALUE] == "in stock", name
        assert span.attributes[sc.OI_OUTPUT_MIME_TYPE] == "text/plain"
    tool = rec.one("execute_tool lookup")
    assert json.loads(tool.attributes[sc.OI_INPUT_VALUE]) == {"sku": "A1"}
    assert tool.attributes[sc.OI_INPUT_MIME_TYPE] == "application/json"
    assert json.loads(tool.attributes[sc.OI_OUTPUT_VALUE]) == {"sku": "A1", "stock": "3"}


async def test_the_openinference_values_are_redacted_as_the_messages_are() -> None:
    def redact(key: str, text: str) -> str | None:
        return None if key == sc.GEN_AI_INPUT_MESSAGES else text.replace("stock", "[x]")

    rec = await run(clerk(), "is A1 there", capture_content=True, redact=redact)
    span = rec.one("invocation shop")
    assert sc.OI_INPUT_VALUE not in span.attributes
    assert span.attributes[sc.OI_OUTPUT_VALUE] == "in [x]"


@pytest.mark.parametrize("mode", [None, "EVENT_ONLY"])
async def test_no_openinference_values_without_content_on_spans(mode: str | None) -> None:
    rec = await run(clerk(), "is A1 there", **({"capture_content": mode} if mode else {}))
    keys = {sc.OI_INPUT_VALUE, sc.OI_OUTPUT_VALUE}
    assert not any(keys & set(s.attributes) for s in rec.spans)
