"""adk-otel's own failures: a span is ended whatever fails while it is being
closed, and the failure is counted and logged once; the runner wrapper is a
standard ``wrapt`` wrapper on the instance."""

from __future__ import annotations

import logging

import wrapt
from google.adk.agents import LlmAgent
from google.adk.runners import InMemoryRunner
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import adk_otel
from adk_otel.ledger.spans import Ledger
from adk_otel.semconv import Outcome
from adk_otel.testing.model import ScriptedModel, reply


class BrokenAttributes:
    """Extra attributes that blow up when read: a bug inside adk-otel's bookkeeping."""

    def __bool__(self) -> bool:
        return True

    def keys(self):
        raise RuntimeError("bookkeeping bug")


def test_a_failure_while_closing_still_ends_the_span_and_is_counted(caplog):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    ledger = Ledger(provider.get_tracer("test"))
    caplog.set_level(logging.WARNING, logger="adk_otel")

    for key in ("a", "b"):
        entry = ledger.start(key, f"span {key}")
        ledger._finish(entry, Outcome.OK, None, None, BrokenAttributes())  # type: ignore[arg-type]

    assert [s.name for s in exporter.get_finished_spans()] == ["span a", "span b"]
    assert ledger.failures == 2
    assert len(ledger) == 0
    warnings = [r for r in caplog.records if "the span was ended all the same" in r.getMessage()]
    assert len(warnings) == 1  # logged once, counted always


def test_the_runner_wrapper_is_a_wrapt_wrapper_on_the_instance_only():
    runner = InMemoryRunner(agent=LlmAgent(name="a", model=ScriptedModel(script=[reply("x")])))
    original = runner.run_async

    adk_otel.instrument(runner, tracer_provider=TracerProvider())  # not a global OTLP one
    wrapped = runner.run_async
    assert isinstance(wrapped, wrapt.FunctionWrapper)
    assert wrapped.__wrapped__ == original
    assert wrapped.__name__ == "run_async"
    assert wrapped.__doc__ == original.__doc__
    assert not isinstance(type(runner).run_async, wrapt.FunctionWrapper)  # ADK's class untouched
    assert adk_otel.plugin_of(runner).internal_errors == 0

    adk_otel.uninstrument(runner)
    assert "run_async" not in runner.__dict__
    assert runner.run_async == original
