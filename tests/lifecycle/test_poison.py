"""Hostile values never lose a span: exceptions whose ``__str__`` raises, lone
surrogates, huge messages; aborts end every layer as ``cancelled``."""

from __future__ import annotations

import asyncio
import os

import pytest
from google.adk.agents import LlmAgent, SequentialAgent
from google.genai import types
from opentelemetry.trace import StatusCode

from adk_otel.testing.model import ScriptedModel, Step, call, reply
from adk_otel.util import sanitize

from .agents import CrashingAgent, clerk, runner_for
from .harness import APP, assert_clean, drive, shape

INV = f"invocation {APP}"


class Unprintable(RuntimeError):
    """An exception whose ``__str__`` raises (lazy or broken exception classes)."""

    def __str__(self) -> str:
        raise ValueError("no message for you")


class UnprintableAgent(CrashingAgent):
    async def _run_async_impl(self, ctx):
        raise Unprintable()
        yield  # pragma: no cover


class AbortingAgent(CrashingAgent):
    abort: type[BaseException] = KeyboardInterrupt

    async def _run_async_impl(self, ctx):
        raise self.abort()
        yield  # pragma: no cover


def raises_unprintable(sku: str) -> dict:
    """A tool that raises an exception nobody can print."""
    raise Unprintable()


UNDECODABLE = os.fsdecode(b"report-\xff.csv")  # a lone surrogate, as from a disk listing


def reads_a_file(sku: str) -> dict:
    """A tool failing on an undecodable file name."""
    raise FileNotFoundError(f"cannot open {UNDECODABLE}")


def huge_failure(sku: str) -> dict:
    """A tool failing with a 1 MB message."""
    raise RuntimeError("x" * 1_000_000)


def _exception_event(span):
    return next(e for e in span.events if e.name == "exception")


async def test_agent_raising_an_unprintable_exception_keeps_every_span(recorder, caplog):
    result = await drive(runner_for(UnprintableAgent(name="crasher")))

    assert isinstance(result.error, Unprintable)  # the user's exception, unchanged
    assert_clean(recorder, caplog.records)
    assert shape(recorder) == [
        (0, INV, "ERROR", "error"),
        (1, "invoke_agent crasher", "ERROR", "error"),
    ]
    agent = recorder.named("invoke_agent crasher")[0]
    assert agent.status.description.startswith("Unprintable")
    event = _exception_event(agent)
    assert event.attributes["exception.type"].endswith("Unprintable")
    assert "Unprintable" in event.attributes["exception.message"]


async def test_tool_raising_an_unprintable_exception_keeps_tool_and_agent_spans(recorder, caplog):
    agent = clerk(call("raises_unprintable", {"sku": "A1"}), tools=[raises_unprintable])
    await drive(runner_for(agent))

    assert_clean(recorder, caplog.records)
    tool = recorder.named("execute_tool raises_unprintable")[0]
    assert tool.status.status_code is StatusCode.ERROR
    assert tool.status.description.startswith("Unprintable")
    assert recorder.named("invoke_agent clerk")[0].status.status_code is StatusCode.ERROR


async def test_undecodable_file_name_is_written_as_valid_utf8(recorder, caplog, adk_logs_kept_out):
    agent = clerk(call("reads_a_file", {"sku": "A1"}), tools=[reads_a_file])
    await drive(runner_for(agent))

    assert_clean(recorder, caplog.records)
    tool = recorder.named("execute_tool reads_a_file")[0]
    for text in (
        tool.status.description,
        _exception_event(tool).attributes["exception.message"],
        _exception_event(tool).attributes["exception.stacktrace"],
    ):
        text.encode("utf-8")  # raises on a lone surrogate
        assert "report-\\udcff.csv" in text  # escaped, still readable


async def test_a_huge_message_is_bounded_on_every_layer(recorder, caplog):
    agent = clerk(call("huge_failure", {"sku": "A1"}), tools=[huge_failure])
    await drive(runner_for(agent))

    assert_clean(recorder, caplog.records)
    for span in recorder.spans:
        if span.status.status_code is not StatusCode.ERROR:
            continue
        assert len(span.status.description) < sanitize.TEXT_LENGTH + 100
        event = _exception_event(span)
        assert len(event.attributes["exception.message"]) < sanitize.TEXT_LENGTH + 100
        assert len(event.attributes["exception.stacktrace"]) < sanitize.STACKTRACE_LENGTH + 100
        assert "characters cut" in event.attributes["exception.message"]


@pytest.mark.parametrize(
    ("abort", "reason"),
    [(KeyboardInterrupt, "keyboard_interrupt"), (SystemExit, "system_exit")],
)
async def test_an_abort_ends_every_layer_cancelled(recorder, caplog, abort, reason):
    crasher = AbortingAgent(name="crasher")
    crasher.abort = abort
    root = SequentialAgent(name="steps", sub_agents=[clerk(reply("first")), crasher])

    with pytest.raises(abort):  # the user's exception propagates unchanged
        await drive(runner_for(root))

    assert_clean(recorder, caplog.records)
    rows = {name: (status, outcome) for _, name, status, outcome in shape(recorder)}
    assert rows[INV] == ("UNSET", "cancelled")
    assert rows["invoke_agent steps"] == ("UNSET", "cancelled")
    assert rows["invoke_agent crasher"] == ("UNSET", "cancelled")
    assert rows["invoke_agent clerk"] == ("OK", "ok")  # it had finished
    for span in recorder.spans:
        if span.attributes["adk.outcome"] == "cancelled":
            assert span.attributes["adk.close_reason"] == reason
        assert "error.type" not in span.attributes


class _Text(str):
    """A str subclass, as a library may hand over for a finish reason."""


def test_a_sequence_of_clean_text_is_kept_and_anything_else_is_cleaned():
    clean = {"gen_ai.response.finish_reasons": ("stop",), "n": 1}
    assert sanitize.attributes(clean) is clean  # the fast path: no copy
    for hostile in ("\ud800", "x" * (sanitize.TEXT_LENGTH + 10), _Text("\ud800")):
        cleaned = sanitize.attributes({"gen_ai.response.finish_reasons": ("stop", hostile)})
        (_, value) = cleaned["gen_ai.response.finish_reasons"]
        assert type(value) is str and len(value) < sanitize.TEXT_LENGTH + 100
        value.encode("utf-8")  # valid UTF-8: no lone surrogate left


async def test_a_function_call_id_repeated_in_one_turn_ends_each_tool_span_once(recorder, caplog):
    """A model that gives two concurrent calls the same id (ADK keeps a
    model's own ids): the second call's span is filed under the key the first
    still holds, so the first ends there (``incomplete``, ``reopened``) instead
    of being left to the agent's end; each span ends exactly once."""
    arrived, both = [], asyncio.Event()

    async def check(sku: str) -> dict[str, str]:
        """Stock for a SKU, once both checks are under way."""
        arrived.append(sku)
        if len(arrived) == 2:
            both.set()
        await both.wait()
        return {"sku": sku}

    twice = Step(
        parts=tuple(
            types.Part(
                function_call=types.FunctionCall(id="call-1", name="check", args={"sku": sku})
            )
            for sku in ("A1", "B2")
        )
    )
    model = ScriptedModel(script=[twice, reply("both in stock")])
    result = await drive(runner_for(LlmAgent(name="clerk", model=model, tools=[check])))

    assert result.error is None
    assert_clean(recorder, caplog.records)
    tools = recorder.named("execute_tool check")
    assert sorted(
        (t.attributes["adk.outcome"], t.attributes.get("adk.close_reason")) for t in tools
    ) == [("incomplete", "reopened"), ("ok", None)]
    assert {t.attributes["gen_ai.tool.call.id"] for t in tools} == {"call-1"}
