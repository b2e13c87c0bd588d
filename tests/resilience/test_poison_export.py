"""Poison data never loses other data on the way out: real ADK runs through
adk-otel's export pipeline and the real OTLP exporter to a real receiver."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Iterator

import pytest
from google.adk.agents import LlmAgent
from google.adk.runners import InMemoryRunner
from google.genai import types
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.trace import Status, StatusCode

import adk_otel
from adk_otel.pipeline.provider import build_tracer_provider, exporting_processor
from adk_otel.testing.model import ScriptedModel, call, reply
from adk_otel.testing.receiver import OtlpReceiver

UNDECODABLE = os.fsdecode(b"report-\xff.csv")


@pytest.fixture(scope="module")
def wire() -> Iterator[tuple[OtlpReceiver, object]]:
    """A receiver and a provider built as adk-otel builds one, exporting to it."""
    with OtlpReceiver() as receiver:
        provider = build_tracer_provider(exporter=OTLPSpanExporter(endpoint=receiver.http_endpoint))
        try:
            yield receiver, provider
        finally:
            provider.shutdown()


def failing_tool(error: BaseException):
    def lookup(sku: str) -> dict:
        """Raises the error it was given."""
        raise error

    return lookup


async def run_once(provider, agent: LlmAgent) -> None:
    runner = adk_otel.instrument(
        InMemoryRunner(agent=agent, app_name="shop"), tracer_provider=provider
    )
    session = await runner.session_service.create_session(app_name="shop", user_id="u")
    message = types.UserContent("hello")
    try:
        async for _ in runner.run_async(user_id="u", session_id=session.id, new_message=message):
            pass
    except Exception:
        pass


def healthy() -> LlmAgent:
    return LlmAgent(name="healthy", model=ScriptedModel(script=[reply("fine")]))


def failing(error: BaseException) -> LlmAgent:
    return LlmAgent(
        name="failing",
        model=ScriptedModel(script=[call("lookup", {"sku": "A1"})]),
        tools=[failing_tool(error)],
    )


def delivered(receiver: OtlpReceiver, provider, expected: int) -> list:
    provider.force_flush()
    spans = receiver.wait_for(expected)
    ids = [span.span_id for span in spans]
    assert len(ids) == len(set(ids)) == expected, [span.name for span in spans]
    assert all(span.end_time_unix_nano for span in spans)
    return spans


def test_one_run_with_an_undecodable_file_name_loses_no_span_of_its_batch(
    wire, caplog, adk_logs_kept_out
):
    receiver, provider = wire
    receiver.clear()
    caplog.set_level(logging.WARNING, logger="adk_otel")
    agents = [healthy(), healthy(), failing(OSError(f"cannot open {UNDECODABLE}")), healthy()]
    for agent in agents:
        asyncio.run(run_once(provider, agent))

    spans = delivered(receiver, provider, 3 + 3 + 4 + 3)
    tool = next(span for span in spans if span.name == "execute_tool lookup")
    assert "report-\\udcff.csv" in tool.status.message
    assert not [r for r in caplog.records if "could not export" in r.getMessage()]


def test_a_foreign_span_that_cannot_be_encoded_is_repaired_not_the_batch_lost(
    wire, caplog, adk_logs_kept_out
):
    receiver, provider = wire
    receiver.clear()
    caplog.set_level(logging.WARNING, logger="adk_otel")
    asyncio.run(run_once(provider, healthy()))
    other = provider.get_tracer("another.library")  # adk-otel never writes such text itself
    with other.start_as_current_span(f"open {UNDECODABLE}") as span:
        span.set_status(Status(StatusCode.ERROR, f"cannot open {UNDECODABLE}"))
        span.add_event(f"retry {UNDECODABLE}")
    asyncio.run(run_once(provider, healthy()))

    spans = delivered(receiver, provider, 3 + 1 + 3)
    foreign = next(span for span in spans if span.name.startswith("open "))
    assert foreign.name == "open report-\\udcff.csv"
    assert exporting_processor(provider).repaired >= 1
    messages = [r.getMessage() for r in caplog.records]
    assert any("not valid UTF-8" in m and "exported" in m for m in messages), messages
    assert not any("collector can be reached" in m for m in messages), messages


# -- property: no value an agent's code produces loses a span ---------------------

texts = st.one_of(
    st.text(st.characters(codec=None, exclude_categories=())),  # surrogates, NUL included
    st.sampled_from(["", UNDECODABLE, "\x00", "é" * 50_000, "x" * 200_000]),
)


def _hostile(message: str, how: str) -> BaseException:
    if how == "plain":
        return RuntimeError(message)

    class Hostile(Exception):
        def __str__(self) -> str:
            if how == "str_raises":
                raise RuntimeError(message)
            return message

        def __repr__(self) -> str:
            raise RuntimeError(message)

    Hostile.__qualname__ = message[:40] or "Hostile"  # even the class name
    return Hostile()


@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(message=texts, how=st.sampled_from(["plain", "str_raises", "weird_class"]))
def test_no_exception_value_loses_a_span(wire, adk_logs_kept_out, message, how):
    receiver, provider = wire
    receiver.clear()
    asyncio.run(run_once(provider, failing(_hostile(message, how))))
    asyncio.run(run_once(provider, healthy()))  # another run in the same batch

    spans = delivered(receiver, provider, 4 + 3)
    failed = [span for span in spans if span.status.code == StatusCode.ERROR.value]
    assert {span.name for span in failed} == {
        "invocation shop",
        "invoke_agent failing",
        "execute_tool lookup",
    }
    for span in failed:
        assert len(span.status.message) < 5000
