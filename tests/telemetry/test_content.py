"""Content capture: off by default, opt-in modes, size limit and redaction."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.tools.agent_tool import AgentTool

from adk_otel import AdkOtelPlugin
from adk_otel import semconv as sc
from adk_otel.reading.content import CAPTURE_ENV, MAX_LENGTH_ENV, TRUNCATION_MARKER
from adk_otel.testing.model import ScriptedModel, call, reply

from .harness import Recorded, all_strings, run

# Each sentinel reaches exactly one kind of content.
PROMPT = "PROMPT-7f3a"
INSTRUCTION = "INSTRUCTION-51c2"
ARGUMENT = "ARGUMENT-c41d"
RESULT = "RESULT-9b0e"
OUTPUT = "OUTPUT-2d88"
NESTED = "NESTED-e61f"
SENTINELS = (PROMPT, INSTRUCTION, ARGUMENT, RESULT, OUTPUT, NESTED)
CONTENT_KEYS = (
    sc.GEN_AI_INPUT_MESSAGES,
    sc.GEN_AI_OUTPUT_MESSAGES,
    sc.GEN_AI_SYSTEM_INSTRUCTIONS,
    sc.GEN_AI_TOOL_CALL_ARGUMENTS,
    sc.GEN_AI_TOOL_CALL_RESULT,
    sc.GEN_AI_TOOL_DEFINITIONS,
)


def lookup(sku: str) -> dict[str, Any]:
    """Stock level for a SKU."""
    return {"sku": "A1", "note": RESULT}


def shop_agent() -> LlmAgent:
    helper = LlmAgent(name="helper", model=ScriptedModel(script=[reply(f"helper says {NESTED}")]))
    return LlmAgent(
        name="clerk",
        instruction=f"You are a clerk. {INSTRUCTION}",
        model=ScriptedModel(
            script=[
                call("lookup", {"sku": ARGUMENT}),
                call("helper", {"request": "ask"}),
                reply(f"final answer {OUTPUT}"),
            ]
        ),
        tools=[lookup, AgentTool(helper)],
    )


async def run_shop(**options: Any) -> Recorded:
    return await run(shop_agent(), f"user asks {PROMPT}", **options)


def leaks(rec: Recorded) -> list[str]:
    return [
        f"{where} has {s}" for where, text in all_strings(rec.spans) for s in SENTINELS if s in text
    ]


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CAPTURE_ENV, raising=False)
    monkeypatch.delenv(MAX_LENGTH_ENV, raising=False)


# -- off by default ---------------------------------------------------------------------


@pytest.mark.parametrize("setting", [None, "NO_CONTENT", "false", "", "no_content"])
async def test_no_content_anywhere_unless_asked(
    monkeypatch: pytest.MonkeyPatch, setting: str | None
) -> None:
    if setting is not None:
        monkeypatch.setenv(CAPTURE_ENV, setting)
    rec = await run_shop()
    assert len(rec.spans) >= 9, "the run must have produced the spans to scan"
    assert leaks(rec) == []


async def test_keyword_false_overrides_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CAPTURE_ENV, "SPAN_AND_EVENT")
    assert leaks(await run_shop(capture_content=False)) == []


async def test_the_scan_sees_every_sentinel_when_capture_is_on() -> None:
    # The control for the tests above: with capture on, every sentinel shows up.
    rec = await run_shop(capture_content="SPAN_AND_EVENT")
    found = {s for _, text in all_strings(rec.spans) for s in SENTINELS if s in text}
    assert found == set(SENTINELS)


# -- where content goes ---------------------------------------------------------------------


@pytest.mark.parametrize("setting", ["SPAN_ONLY", "span_only", "true", True])
async def test_span_mode_puts_convention_json_on_spans(
    monkeypatch: pytest.MonkeyPatch, setting: str | bool
) -> None:
    if isinstance(setting, bool):
        rec = await run_shop(capture_content=setting)
    else:
        monkeypatch.setenv(CAPTURE_ENV, setting)
        rec = await run_shop()
    outer = max(rec.kind("invocation"), key=lambda s: s.end_time or 0)
    assert json.loads(outer.attributes[sc.GEN_AI_INPUT_MESSAGES]) == [
        {"role": "user", "parts": [{"type": "text", "content": f"user asks {PROMPT}"}]}
    ]
    assert json.loads(outer.attributes[sc.GEN_AI_OUTPUT_MESSAGES]) == [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": f"final answer {OUTPUT}"}],
            "finish_reason": "stop",
        }
    ]
    tool = rec.one("execute_tool lookup")
    assert json.loads(tool.attributes[sc.GEN_AI_TOOL_CALL_ARGUMENTS]) == {"sku": ARGUMENT}
    assert json.loads(tool.attributes[sc.GEN_AI_TOOL_CALL_RESULT]) == {"sku": "A1", "note": RESULT}

    first, *_, last = sorted(
        (s for s in rec.kind("model") if s.attributes[sc.GEN_AI_AGENT_NAME] == "clerk"),
        key=lambda s: s.start_time or 0,
    )
    system = json.loads(first.attributes[sc.GEN_AI_SYSTEM_INSTRUCTIONS])
    assert system[0]["type"] == "text" and INSTRUCTION in system[0]["content"]
    assert json.loads(first.attributes[sc.GEN_AI_OUTPUT_MESSAGES]) == [
        {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": _call_id(first), "name": "lookup",
                       "arguments": {"sku": ARGUMENT}}],
            "finish_reason": "stop",
        }
    ]  # fmt: skip
    # The last call sees the whole conversation: user, tool calls, tool results.
    roles = [m["role"] for m in json.loads(last.attributes[sc.GEN_AI_INPUT_MESSAGES])]
    assert roles == ["user", "assistant", "tool", "assistant", "tool"]
    assert not any(e.name for s in rec.spans for e in s.events if e.name != "exception")


class Unprintable:
    """A value JSON cannot hold whose ``str()`` (and ``repr()``) raises."""

    def __str__(self) -> str:
        raise RuntimeError("not printable")

    __repr__ = __str__


async def test_a_value_that_cannot_print_itself_is_named_and_the_rest_kept() -> None:
    def lookup(sku: str) -> dict[str, Any]:
        """Stock level for a SKU."""
        return {"sku": sku, "shelf": Unprintable(), "note": RESULT}

    agent = LlmAgent(
        name="clerk",
        model=ScriptedModel(script=[call("lookup", {"sku": ARGUMENT}), reply("done")]),
        tools=[lookup],
    )
    rec = await run(agent, "stock?", capture_content=True)
    assert rec.error is None
    result = rec.one("execute_tool lookup").attributes.get(sc.GEN_AI_TOOL_CALL_RESULT)
    assert result is not None, "the whole result was dropped for one value"
    assert json.loads(str(result)) == {"sku": ARGUMENT, "shelf": "<Unprintable>", "note": RESULT}


def _call_id(model_span: Any) -> str:
    messages = json.loads(model_span.attributes[sc.GEN_AI_OUTPUT_MESSAGES])
    return messages[0]["parts"][0]["id"]


async def test_event_only_mode_keeps_content_off_span_attributes() -> None:
    rec = await run_shop(capture_content="EVENT_ONLY")
    for span in rec.spans:
        assert not set(CONTENT_KEYS) & set(span.attributes), span.name
    models = rec.kind("model")
    assert len(models) >= 2, [span.name for span in rec.spans]
    for span in models:
        (event,) = span.events
        assert event.name == sc.GEN_AI_INFERENCE_DETAILS_EVENT
        assert event.attributes[sc.GEN_AI_OPERATION_NAME] == "generate_content"
        assert event.attributes[sc.GEN_AI_REQUEST_MODEL] == "scripted-model"
        assert {sc.GEN_AI_INPUT_MESSAGES, sc.GEN_AI_OUTPUT_MESSAGES} <= set(event.attributes)
        offered_tools = span.attributes[sc.GEN_AI_AGENT_NAME] == "clerk"  # the helper has none
        assert (sc.GEN_AI_TOOL_DEFINITIONS in event.attributes) is offered_tools
    (tool_event,) = rec.one("execute_tool lookup").events
    assert tool_event.name == sc.ADK_CONTENT_EVENT
    assert ARGUMENT in tool_event.attributes[sc.GEN_AI_TOOL_CALL_ARGUMENTS]
    assert RESULT in tool_event.attributes[sc.GEN_AI_TOOL_CALL_RESULT]
    outer = max(rec.kind("invocation"), key=lambda s: s.end_time or 0)
    (run_event,) = outer.events
    assert OUTPUT in run_event.attributes[sc.GEN_AI_OUTPUT_MESSAGES]


async def test_span_and_event_mode_records_both() -> None:
    rec = await run_shop(capture_content="SPAN_AND_EVENT")
    tool = rec.one("execute_tool lookup")
    (event,) = tool.events
    assert (
        tool.attributes[sc.GEN_AI_TOOL_CALL_ARGUMENTS]
        == (event.attributes[sc.GEN_AI_TOOL_CALL_ARGUMENTS])
    )


async def test_unknown_value_warns_once_naming_the_variable_and_stays_off(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(CAPTURE_ENV, "EVERYTHING-please")
    caplog.set_level(logging.WARNING, logger="adk_otel")
    first = await run_shop()
    second = await run_shop()
    assert leaks(first) == leaks(second) == []
    warnings = [r for r in caplog.records if CAPTURE_ENV in r.getMessage()]
    assert len(warnings) == 1
    assert "EVERYTHING-please" in warnings[0].getMessage()


# -- size limit and redaction ----------------------------------------------------------------


def content_values(rec: Recorded) -> list[str]:
    values = [str(s.attributes[k]) for s in rec.spans for k in CONTENT_KEYS if k in s.attributes]
    assert values, "content capture produced nothing to check"
    return values


async def test_values_are_cut_to_the_keyword_limit() -> None:
    rec = await run_shop(capture_content=True, content_max_length=48)
    values = content_values(rec)
    assert all(len(v) <= 48 for v in values)
    assert any(v.endswith(TRUNCATION_MARKER) and len(v) == 48 for v in values)
    # Short values are untouched.
    assert json.loads(rec.one("execute_tool helper").attributes[sc.GEN_AI_TOOL_CALL_ARGUMENTS]) == {
        "request": "ask"
    }


async def test_values_are_cut_to_the_environment_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MAX_LENGTH_ENV, "64")
    values = content_values(await run_shop(capture_content="SPAN_ONLY"))
    assert max(len(v) for v in values) == 64


async def test_bad_limit_warns_and_uses_the_default(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(MAX_LENGTH_ENV, "lots")
    caplog.set_level(logging.WARNING, logger="adk_otel")
    values = content_values(await run_shop(capture_content=True))
    assert not any(v.endswith(TRUNCATION_MARKER) for v in values)
    assert any(MAX_LENGTH_ENV in r.getMessage() for r in caplog.records)


async def test_redaction_rewrites_before_the_cut() -> None:
    seen: list[tuple[str, str]] = []

    def redact(key: str, value: str) -> str:
        seen.append((key, value))
        for sentinel in SENTINELS:
            value = value.replace(sentinel, "[REDACTED]")
        return value

    padding = "x" * 200
    agent = LlmAgent(name="clerk", model=ScriptedModel(script=[reply(f"{padding} {OUTPUT}")]))
    rec = await run(agent, f"{PROMPT} {padding}", capture_content=True, redact=redact,
                    content_max_length=100)  # fmt: skip
    assert leaks(rec) == []
    # The hook saw whole values: the output sentinel sits past the cut.
    assert any(key == sc.GEN_AI_OUTPUT_MESSAGES and OUTPUT in value for key, value in seen)
    assert {key for key, _ in seen} == {
        sc.GEN_AI_INPUT_MESSAGES,
        sc.GEN_AI_OUTPUT_MESSAGES,
        sc.GEN_AI_SYSTEM_INSTRUCTIONS,
    }
    assert "[REDACTED]" in rec.one("invocation shop").attributes[sc.GEN_AI_INPUT_MESSAGES]
    assert all(len(v) <= 100 for v in content_values(rec))


async def test_redaction_can_drop_a_value_and_a_failing_hook_drops_it_too(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def redact(key: str, value: str) -> str | None:
        if key == sc.GEN_AI_TOOL_CALL_RESULT:
            return None
        if key == sc.GEN_AI_TOOL_CALL_ARGUMENTS:
            raise ValueError("redactor bug")
        return value

    caplog.set_level(logging.WARNING, logger="adk_otel")
    rec = await run_shop(capture_content=True, redact=redact)
    tool = rec.one("execute_tool lookup")
    assert sc.GEN_AI_TOOL_CALL_RESULT not in tool.attributes
    assert sc.GEN_AI_TOOL_CALL_ARGUMENTS not in tool.attributes
    assert sc.GEN_AI_INPUT_MESSAGES in rec.kind("model")[0].attributes
    assert ARGUMENT not in " ".join(t for _, t in all_strings([tool]))
    assert any("redact" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(("capture", "expect_work"), [(None, False), ("SPAN_ONLY", True)])
async def test_per_event_hook_does_nothing_while_capture_is_off(
    monkeypatch: pytest.MonkeyPatch, capture: str | None, expect_work: bool
) -> None:
    calls: list[Any] = []

    def counting(self: AdkOtelPlugin, capturing: Any, invocation_context: Any, event: Any) -> None:
        calls.append(event)

    monkeypatch.setattr(AdkOtelPlugin, "_capture_final_response", counting)
    rec = await run_shop(capture_content=capture)
    assert rec.events, "the run must have produced events"
    assert bool(calls) is expect_work


# -- tool definitions -------------------------------------------------------------------------


def definitions(span: Any) -> list[dict[str, Any]]:
    return json.loads(span.attributes[sc.GEN_AI_TOOL_DEFINITIONS])  # type: ignore[no-any-return]


async def test_model_spans_list_the_tools_offered_in_the_conventions_format() -> None:
    from google.adk.tools import google_search

    from .harness import ScriptedGemini

    agent = LlmAgent(
        name="clerk",
        model=ScriptedGemini(script=[call("lookup", {"sku": "A1"}), reply("done")]),
        tools=[lookup, google_search],
    )
    rec = await run(agent, capture_content=True)
    models = rec.kind("model")
    assert len(models) == 2, [span.name for span in rec.spans]  # the tool call, then the reply
    for span in models:  # every call is offered the same tools
        function, builtin = definitions(span)
        assert function["type"] == "function"
        assert function["name"] == "lookup"
        assert function["description"] == "Stock level for a SKU."
        parameters = function["parameters"]
        assert parameters["type"] == "object"
        assert parameters["properties"]["sku"]["type"] == "string"
        assert parameters["required"] == ["sku"]
        # A provider's built-in tool: its own type, as the conventions record them.
        assert builtin == {"type": "google_search", "name": "google_search"}
    # Only model calls are offered tools.
    others = [span for span in rec.spans if span.attributes[sc.ADK_SPAN_KIND] != "model"]
    assert {span.attributes[sc.ADK_SPAN_KIND] for span in others} >= {"agent", "tool"}
    for span in others:
        assert sc.GEN_AI_TOOL_DEFINITIONS not in span.attributes, span.name


def first_model(rec: Any) -> Any:
    """The run's first model call (by start: spans end once their layer's
    callbacks are done, which is not always in the order they started)."""
    return min(rec.kind("model"), key=lambda span: span.start_time or 0)


async def test_tool_definitions_are_content_bounded_and_redacted_like_it() -> None:
    assert sc.GEN_AI_TOOL_DEFINITIONS not in first_model(await run_shop()).attributes
    seen: list[str] = []

    def redact(key: str, value: str) -> str:
        seen.append(key)
        return value.replace("Stock level", "REDACTED")

    rec = await run_shop(capture_content=True, redact=redact, content_max_length=60)
    value = str(first_model(rec).attributes[sc.GEN_AI_TOOL_DEFINITIONS])
    assert sc.GEN_AI_TOOL_DEFINITIONS in seen
    assert len(value) == 60 and value.endswith(TRUNCATION_MARKER)
    assert "Stock level" not in value

    rec = await run_shop(capture_content=True)
    names = [d["name"] for d in definitions(first_model(rec))]
    assert names == ["lookup", "helper"]  # an AgentTool is offered as a function


async def test_tool_definitions_go_into_the_details_record_structured() -> None:
    from .test_details_event import details, logs

    provider, exporter = logs()
    rec = await run_shop(capture_content="EVENT_ONLY", logger_provider=provider)
    clerk_calls = [s for s in rec.kind("model") if s.attributes[sc.GEN_AI_AGENT_NAME] == "clerk"]
    assert len(clerk_calls) == 3  # the lookup, the helper, the answer
    records = {r.span_id: r for r in details(exporter)}
    for span in clerk_calls:
        offered = records[span.context.span_id].attributes[sc.GEN_AI_TOOL_DEFINITIONS]
        assert [d["name"] for d in offered] == ["lookup", "helper"]
        assert offered[0]["parameters"]["properties"]["sku"]["type"] == "string"
