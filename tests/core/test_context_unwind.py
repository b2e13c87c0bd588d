"""A span ended where its context is not the current one is detached later,
in the context where it is current, by the next hook that runs there
(``Ledger.unwind``), never by a reset against a foreign token."""

from __future__ import annotations

import contextvars
import logging

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from adk_otel.ledger.spans import Entry, Ledger
from adk_otel.semconv import Outcome


def _ledger() -> tuple[Ledger, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return Ledger(provider.get_tracer("test")), exporter


def _open_two(ledger: Ledger) -> tuple[Entry, Entry]:
    parent = ledger.start("parent", "parent")
    ledger.attach(parent)
    child = ledger.start("child", "child", parent=parent)
    ledger.attach(child)
    return parent, child


def test_a_span_ended_from_another_context_is_detached_in_its_own_by_unwind(caplog):
    caplog.set_level(logging.DEBUG)
    ledger, exporter = _ledger()
    home = contextvars.copy_context()
    parent, child = home.run(_open_two, ledger)

    # Ended from elsewhere (another task's copy of the context, a closer at
    # shutdown): its token is not for that context, so it is left alone there.
    contextvars.copy_context().run(ledger.end, "child", Outcome.INCOMPLETE, reason="elsewhere")
    assert [s.name for s in exporter.get_finished_spans()] == ["child"]
    assert home.run(trace.get_current_span) is child.span  # still current at home

    home.run(ledger.unwind)  # the next hook at home
    assert home.run(trace.get_current_span) is parent.span
    home.run(ledger.unwind)  # nothing more to do: the parent is open
    assert home.run(trace.get_current_span) is parent.span

    home.run(ledger.end, "parent", Outcome.OK)
    assert home.run(trace.get_current_span) is trace.INVALID_SPAN
    assert not any("detach" in r.getMessage().lower() for r in caplog.records)


def test_a_parent_ended_under_a_current_child_is_detached_once_the_child_is(caplog):
    caplog.set_level(logging.DEBUG)
    ledger, exporter = _ledger()
    home = contextvars.copy_context()
    parent, _ = home.run(_open_two, ledger)

    # The parent's layer ends first, in the same context, with the child's
    # context on top: resetting the parent's token now would also drop the child's.
    home.run(ledger.end_entry, parent, Outcome.OK)
    # end_entry ends open descendants first (the child, current: detached at once).
    assert [s.name for s in exporter.get_finished_spans()] == ["child", "parent"]
    assert home.run(trace.get_current_span) is trace.INVALID_SPAN

    # A child concluded apart (ended on its own first), then the parent: the
    # child's detach leaves the parent's context current, ended; unwind clears it.
    other = contextvars.copy_context()
    parent2, child2 = other.run(_open_two, ledger)
    other.run(ledger._finish, parent2, Outcome.OK, None, None)  # not on top: left attached
    assert other.run(trace.get_current_span) is child2.span
    other.run(ledger.end_entry, child2, Outcome.OK)
    assert other.run(trace.get_current_span) is parent2.span  # ended, still current
    other.run(ledger.unwind)
    assert other.run(trace.get_current_span) is trace.INVALID_SPAN
    assert parent2._token is None and child2._token is None
    assert not any("detach" in r.getMessage().lower() for r in caplog.records)


def test_a_span_ended_where_it_is_current_is_detached_at_once():
    ledger, _ = _ledger()
    home = contextvars.copy_context()
    parent, child = home.run(_open_two, ledger)
    home.run(ledger.end_entry, child, Outcome.OK)
    assert home.run(trace.get_current_span) is parent.span  # no unwind needed
    assert child._token is None
    home.run(ledger.end_entry, parent, Outcome.OK)
    assert home.run(trace.get_current_span) is trace.INVALID_SPAN


_OTHER_RUNTIME = """
import contextvars
from opentelemetry import context as otel_context
from opentelemetry.context.contextvars_context import ContextVarsRuntimeContext

class Recording(ContextVarsRuntimeContext):
    "A runtime context of the application's own: the API's calls go through it."
    calls = 0
    def attach(self, context):
        Recording.calls += 1
        return super().attach(context)

otel_context._RUNTIME_CONTEXT = Recording()  # before adk-otel is imported

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from adk_otel.ledger.spans import Ledger
from adk_otel.semconv import Outcome

ledger = Ledger(TracerProvider().get_tracer("test"))
home = contextvars.copy_context()
parent = home.run(ledger.start, "parent", "parent", current=True)
child = home.run(ledger.start, "child", "child", parent=parent, current=True)
assert Recording.calls == 2, Recording.calls  # attached through the application's runtime
assert home.run(trace.get_current_span) is child.span
contextvars.copy_context().run(ledger.end, "child", Outcome.INCOMPLETE, reason="elsewhere")
home.run(ledger.unwind)
assert home.run(trace.get_current_span) is parent.span
home.run(ledger.end, "parent", Outcome.OK)
assert home.run(trace.get_current_span) is trace.INVALID_SPAN
print("ok")
"""


def test_an_application_runtime_context_is_used_as_the_api_uses_it():
    """The ledger reads and sets the API's context variable itself only with
    the API's default runtime context: a runtime of the application's own (a
    subclass here) gets every attach, and attach, unwind and end still leave
    the right span current."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _OTHER_RUNTIME], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
