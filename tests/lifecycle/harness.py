"""Lifecycle test harness: run real ADK, record every span, check invariants.

ADK's own spans go through the *global* tracer provider, so the harness
installs one real SDK provider for the session and routes its spans to the
current test's :class:`Recorder`. Every scenario ends with
:func:`assert_clean`, which holds the project's lifecycle claims: every span
ended exactly once, status consistent with ``adk.outcome``, parents inside the
trace, children ending no later than their parents, nothing left current, no
ADK duplicate spans, and no "Failed to detach context" logged.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from google.adk.runners import Runner
from google.genai import types
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.trace import StatusCode

from adk_otel.pipeline.provider import AdkOtelTracerProvider
from adk_otel.semconv import ADK_OUTCOME, ADK_SCOPE, INSTRUMENTATION_SCOPE, Outcome

APP = "shop"
USER = "u1"

_STATUS_FOR_OUTCOME = {
    Outcome.OK.value: StatusCode.OK,
    Outcome.ERROR.value: StatusCode.ERROR,
    Outcome.CANCELLED.value: StatusCode.UNSET,
    Outcome.INCOMPLETE.value: StatusCode.UNSET,
    Outcome.PAUSED.value: StatusCode.UNSET,
}
_BAD_LOGS = ("Failed to detach context", "Calling end() on an ended span")


class Recorder:
    """Spans started and ended while one test runs."""

    def __init__(self) -> None:
        self.started: dict[int, Span] = {}
        self.ended: list[ReadableSpan] = []
        self.end_counts: Counter[int] = Counter()
        self.changed = threading.Condition()

    def wait_for(self, predicate: Callable[[Recorder], bool], timeout: float = 10.0) -> None:
        """Block until ``predicate`` holds (spans may end in ADK's own thread)."""
        with self.changed:
            if not self.changed.wait_for(lambda: predicate(self), timeout):
                raise AssertionError(f"timed out waiting for spans\n{render(self.ended)}")

    async def settle(self, predicate: Callable[[Recorder], bool], turns: int = 1000) -> None:
        """Let the event loop run until ``predicate`` holds (work scheduled by
        asyncio itself, such as finalising a dropped async generator)."""
        for _ in range(turns):
            if predicate(self):
                return
            await asyncio.sleep(0)
        raise AssertionError(f"spans never settled\n{render(self.ended)}")

    def ended_named(self, name: str) -> bool:
        return any(s.name == name for s in self.ended)

    @property
    def spans(self) -> list[ReadableSpan]:
        return [s for s in self.ended if s.instrumentation_scope.name == INSTRUMENTATION_SCOPE]

    @property
    def adk_spans(self) -> list[ReadableSpan]:
        return [s for s in self.ended if s.instrumentation_scope.name == ADK_SCOPE]

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.ended if s.name == name]

    def one(self, name: str) -> ReadableSpan:
        found = self.named(name)
        assert len(found) == 1, f"expected one {name!r}, got {len(found)}\n{render(self.ended)}"
        return found[0]

    def parent_of(self, span: ReadableSpan) -> ReadableSpan | None:
        if span.parent is None:
            return None
        return next((s for s in self.ended if s.context.span_id == span.parent.span_id), None)


class Dispatch(SpanProcessor):
    """The session provider's only processor: forwards to the current test."""

    target: Recorder | None = None

    def on_start(self, span: Span, parent_context: otel_context.Context | None = None) -> None:
        if self.target is not None:
            self.target.started[span.context.span_id] = span

    def on_end(self, span: ReadableSpan) -> None:
        target = self.target
        if target is not None:
            with target.changed:
                target.ended.append(span)
                target.end_counts[span.context.span_id] += 1
                target.changed.notify_all()


DISPATCH = Dispatch()


def install_global_provider() -> TracerProvider:
    """Install (once) the session's global SDK provider, or join an existing one.
    It is adk-otel's (the SDK's, with ADK's scope routed to adk-otel), as
    adk-otel builds it when no provider is installed: workflow nodes get spans."""
    current = trace.get_tracer_provider()
    if not isinstance(current, TracerProvider):
        trace.set_tracer_provider(AdkOtelTracerProvider())
        current = trace.get_tracer_provider()
    assert isinstance(current, TracerProvider)
    if not getattr(current, "_adk_otel_test_dispatch", False):
        current.add_span_processor(DISPATCH)
        current._adk_otel_test_dispatch = True  # type: ignore[attr-defined]
    return current


def render(spans: Sequence[ReadableSpan]) -> str:
    """A plain tree of the spans, for assertion messages."""
    by_parent: dict[int | None, list[ReadableSpan]] = {}
    ids = {s.context.span_id for s in spans}
    for s in sorted(spans, key=lambda s: s.start_time or 0):
        parent = s.parent.span_id if s.parent and s.parent.span_id in ids else None
        by_parent.setdefault(parent, []).append(s)
    lines: list[str] = []

    def walk(parent: int | None, depth: int) -> None:
        for s in by_parent.get(parent, []):
            lines.append(
                f"{'  ' * depth}{s.name} [{s.instrumentation_scope.name}] "
                f"{s.status.status_code.name} {s.attributes.get(ADK_OUTCOME)} "
                f"{s.attributes.get('adk.close_reason', '')}"
            )
            walk(s.context.span_id, depth + 1)

    walk(None, 0)
    return "\n".join(lines)


@dataclass
class Result:
    events: list[Any] = field(default_factory=list)
    error: BaseException | None = None
    session_id: str = ""


async def new_session(runner: Runner, user: str = USER) -> str:
    session = await runner.session_service.create_session(app_name=runner.app_name, user_id=user)
    return session.id


async def drive(
    runner: Runner,
    text: str = "hello",
    *,
    session_id: str | None = None,
    run_config: Any = None,
    new_message: types.Content | None = None,
    invocation_id: str | None = None,
) -> Result:
    """Run one invocation to the end; the run's exception is returned, not raised."""
    result = Result(session_id=session_id or await new_session(runner))
    kwargs: dict[str, Any] = {}
    if run_config is not None:
        kwargs["run_config"] = run_config
    if invocation_id is not None:
        kwargs["invocation_id"] = invocation_id
    message = new_message if new_message is not None else types.UserContent(text)
    try:
        async for event in runner.run_async(
            user_id=USER, session_id=result.session_id, new_message=message, **kwargs
        ):
            result.events.append(event)
    except Exception as exc:
        result.error = exc
    return result


def assert_clean(
    recorder: Recorder,
    logs: Iterable[logging.LogRecord],
    *,
    caller: trace.Span | None = None,
    allow_adk_spans: bool = False,
) -> None:
    """The lifecycle invariants every scenario must hold."""
    tree = render(recorder.ended)
    open_ids = set(recorder.started) - set(recorder.end_counts)
    assert not open_ids, (
        "spans left open: " + ", ".join(recorder.started[i].name for i in open_ids) + f"\n{tree}"
    )
    twice = [i for i, n in recorder.end_counts.items() if n != 1]
    assert not twice, f"spans ended more than once\n{tree}"
    bad = [r.getMessage() for r in logs if any(b in r.getMessage() for b in _BAD_LOGS)]
    assert not bad, f"bad log records: {bad}"
    current = trace.get_current_span()
    expected_current = caller if caller is not None else trace.INVALID_SPAN
    assert current is expected_current, f"span left current in the caller: {current}"
    if not allow_adk_spans:
        assert not recorder.adk_spans, f"ADK's duplicate spans were recorded\n{tree}"
    by_id = {s.context.span_id: s for s in recorder.ended}
    caller_id = caller.get_span_context().span_id if caller is not None else None
    for span in recorder.spans:
        outcome = span.attributes.get(ADK_OUTCOME)
        assert outcome in _STATUS_FOR_OUTCOME, f"{span.name}: adk.outcome={outcome!r}\n{tree}"
        assert span.status.status_code is _STATUS_FOR_OUTCOME[outcome], (
            f"{span.name}: status {span.status.status_code.name} with outcome {outcome}\n{tree}"
        )
        if span.parent is None:
            assert caller_id is None, f"{span.name} is a root, expected under the caller\n{tree}"
            continue
        parent = by_id.get(span.parent.span_id)
        if parent is None:
            assert span.parent.span_id == caller_id, f"{span.name}: broken parent link\n{tree}"
            continue
        assert parent.context.trace_id == span.context.trace_id
        assert span.end_time is not None and parent.end_time is not None
        assert span.end_time <= parent.end_time, f"{span.name} outlived {parent.name}\n{tree}"


def shape(recorder: Recorder) -> list[tuple[int, str, str, str]]:
    """(depth, name, status, outcome) rows of adk-otel's spans, depth-first."""
    rows: list[tuple[int, str, str, str]] = []
    spans = recorder.spans
    ids = {s.context.span_id for s in spans}
    children: dict[int | None, list[ReadableSpan]] = {}
    for s in sorted(spans, key=lambda s: (s.start_time or 0, s.name)):
        parent = s.parent.span_id if s.parent and s.parent.span_id in ids else None
        children.setdefault(parent, []).append(s)

    def walk(parent: int | None, depth: int) -> None:
        for s in children.get(parent, []):
            rows.append(
                (depth, s.name, s.status.status_code.name, str(s.attributes.get(ADK_OUTCOME)))
            )
            walk(s.context.span_id, depth + 1)

    walk(None, 0)
    return rows
