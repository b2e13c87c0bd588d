"""Evaluation runs as the plugin sees them: their labels and their spans.

ADK's evaluation (``adk eval``, ``AgentEvaluator``, ``LocalEvalService``) runs
each eval case through a Runner of its own, but never tells that Runner which
eval set and case it serves: those ids stay in the eval service. So the eval
service adk-otel provides (``evaluations.py``) runs each case's inference
under :data:`CURRENT_CASE`, and the plugin's ``before_run`` labels the
invocation span from it: the eval set id, the eval case id, and the
invocation's index in the case.

ADK scores a case only after every inference is done, when every invocation
span has ended. So the plugin also remembers, for each run of an evaluation
(one under :data:`CURRENT_CASE`, or in a session ADK's eval service named,
``adk-eval-session-<uuid>``), the invocation span's context under ADK's
invocation id: the id each of ADK's eval results carries. The scores are then
sent as events in that span's context (``eval_events.py``). The memory is
bounded (:data:`REMEMBERED`, oldest forgotten first) and holds span contexts
only, never a span or an ADK object.
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import trace

from ..pipeline.provider import TelemetrySettings
from ..semconv import ADK_EVAL_CASE_ID, ADK_EVAL_INVOCATION_INDEX, ADK_EVAL_SET_ID

EVAL_SESSION_PREFIX = "adk-eval-session-"
"""How ADK's eval service names the sessions it makes (2.5 through 2.13),
unless an eval case pins its own session id."""
_PREFIX_LENGTH = len(EVAL_SESSION_PREFIX)
REMEMBERED = 10_000
"""Evaluation runs whose span context is kept for their scores, at most."""


@dataclass(slots=True)
class EvalCase:
    """The eval case whose inference runs in this context."""

    eval_set_id: str
    eval_case_id: str
    _next: itertools.count[int] = field(default_factory=itertools.count)

    def next_index(self) -> int:
        """The index of the case's next invocation (0 for the first)."""
        return next(self._next)


CURRENT_CASE: ContextVar[EvalCase | None] = ContextVar("adk_otel_eval_case", default=None)
"""Set by adk-otel's eval service around one case's inference."""


@dataclass(frozen=True, slots=True)
class Judged:
    """An evaluation run's invocation span, for the scores sent later."""

    span_context: trace.SpanContext
    settings: TelemetrySettings
    """The options of the plugin that traced the run (its providers)."""
    eval_set_id: str | None
    eval_case_id: str | None
    index: int | None


class _Remembered:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_invocation: OrderedDict[str, Judged] = OrderedDict()

    def put(self, invocation_id: str, judged: Judged) -> None:
        with self._lock:
            self._by_invocation[invocation_id] = judged
            self._by_invocation.move_to_end(invocation_id)
            while len(self._by_invocation) > REMEMBERED:
                self._by_invocation.popitem(last=False)

    def get(self, invocation_id: str) -> Judged | None:
        with self._lock:
            return self._by_invocation.get(invocation_id)


RUNS = _Remembered()


def label(span: trace.Span, invocation_context: Any, settings: TelemetrySettings) -> None:
    """Label ``span`` (a run's invocation span, just started) when the run is
    an evaluation's, and remember its context for the scores."""
    case = CURRENT_CASE.get()
    if case is None:
        try:  # every run passes here: attribute reads and a slice, no calls
            session_id = invocation_context.session.id
            if session_id[:_PREFIX_LENGTH] != EVAL_SESSION_PREFIX:
                return
        except (AttributeError, TypeError):
            return
    invocation_id = getattr(invocation_context, "invocation_id", None)
    if not isinstance(invocation_id, str):
        return
    index = None
    if case is not None:
        index = case.next_index()
        if span.is_recording():
            span.set_attributes(
                {
                    ADK_EVAL_SET_ID: case.eval_set_id,
                    ADK_EVAL_CASE_ID: case.eval_case_id,
                    ADK_EVAL_INVOCATION_INDEX: index,
                }
            )
    context = span.get_span_context()
    if context.is_valid:
        RUNS.put(
            invocation_id,
            Judged(
                context,
                settings,
                case.eval_set_id if case else None,
                case.eval_case_id if case else None,
                index,
            ),
        )
