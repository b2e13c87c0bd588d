"""Who else records a model call, seen while it runs: the counted-once rule.

A model call is one inference, and LLM backends add inferences up over spans (tokens, LLM-call
counts) and over the ``gen_ai.client.*`` metrics. Any library may record the call too: a
client instrumentation wrapping the model's client, an observability SDK, a tracing framework's
autolog. Whatever it is, it shows itself the same way: while the call runs, it starts a span
under adk-otel's model span (or under a span of its own there) that carries an inference.

* **The span.** A span started under the model span, by a tracer other than adk-otel's and
  ADK's, is the call's inference when it carries one (:func:`carries_inference`): a GenAI
  ``gen_ai.operation.name`` of an inference (chat, generate_content, text_completion), token
  usage under the GenAI names (the current or the older ``prompt_tokens`` ones) or
  OpenInference's, or an OpenInference or MLflow LLM / CHAT_MODEL kind. adk-otel's model span
  then becomes the ADK layer around it (``call_llm``, CHAIN, its usage as ``adk.usage.*``,
  ``adk.inference.recorded_by`` naming the tracer's scope).
* **The metrics.** adk-otel records ``gen_ai.client.token.usage`` and
  ``gen_ai.client.operation.duration`` (or the latest conventions' names) for the call
  exactly when nothing else recorded them for it: as the inference span starts, the points of
  every such instrument another meter made on the meter providers in use are noted; when the
  call is done, an instrument that received points in between recorded the call.

:class:`InferenceWatch` is a span processor on the tracer providers in use. It works only
while a model call is open (one empty-dict test per span otherwise), so a model call that no
one else records costs nothing more. What it cannot see, because the recorder's span goes to
a provider adk-otel does not watch, or the trace is sampled out, or the recorder asks to be
stopped before the call (Traceloop's key), is still recognised by name
(``reading/inference_recorders.py``).
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterable, Mapping
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from .. import semconv as sc

INFERENCE_OPERATIONS = frozenset({"chat", "generate_content", "text_completion"})
"""The GenAI operations that are an inference (a model call), not an agent's or a tool's."""
INFERENCE_USAGE = (
    sc.GEN_AI_USAGE_INPUT_TOKENS,
    sc.GEN_AI_USAGE_OUTPUT_TOKENS,
    "gen_ai.usage.prompt_tokens",  # the conventions' older names, still written by some
    "gen_ai.usage.completion_tokens",
    "llm.token_count.prompt",  # OpenInference's
    "llm.token_count.completion",
    "llm.token_count.total",
)
INFERENCE_KINDS = frozenset({"LLM", "CHAT_MODEL", '"LLM"', '"CHAT_MODEL"'})
"""OpenInference's ``openinference.span.kind`` and MLflow's ``mlflow.spanType`` (which MLflow
writes JSON-encoded) values of an inference."""
_KIND_KEYS = (sc.OPENINFERENCE_SPAN_KIND, "mlflow.spanType")
_OWN_SCOPES = frozenset({sc.INSTRUMENTATION_SCOPE, sc.ADK_SCOPE})
"""adk-otel's own spans, and ADK's (kept where they cannot be switched off): never another
recorder of the call."""

TOKEN_METRICS = frozenset(
    {
        sc.METRIC_CLIENT_TOKEN_USAGE,
        sc.METRIC_USAGE_INPUT_TOKENS,
        sc.METRIC_USAGE_OUTPUT_TOKENS,
        sc.METRIC_OPERATION_INPUT_TOKENS,
        sc.METRIC_OPERATION_OUTPUT_TOKENS,
    }
)
DURATION_METRICS = frozenset(
    {sc.METRIC_CLIENT_OPERATION_DURATION, sc.METRIC_CLIENT_INFERENCE_DURATION}
)

Points = tuple[tuple[tuple[int, Any], ...], tuple[tuple[int, Any], ...]]
"""The points each token-usage and each duration instrument of another meter holds."""


def carries_inference(attributes: Mapping[str, Any] | None) -> bool:
    """Whether a span's attributes say it is a model call's inference."""
    if not attributes:
        return False
    if attributes.get(sc.GEN_AI_OPERATION_NAME) in INFERENCE_OPERATIONS:
        return True
    for key in _KIND_KEYS:
        if attributes.get(key) in INFERENCE_KINDS:
            return True
    return any(key in attributes for key in INFERENCE_USAGE)


class Seen:
    """What another recorder did during one model call (``Facts.seen``)."""

    __slots__ = ("by", "duration", "measured", "points", "tokens")

    def __init__(self) -> None:
        self.by: str | None = None
        """The scope of the tracer whose span is the call's inference."""
        self.points: Points | None = None
        """The other meters' model-call points as the first span under the call started."""
        self.tokens: bool = False
        """Another meter recorded the call's token usage (decided as the call finishes)."""
        self.duration: bool = False
        """Another meter recorded the call's duration (decided as the call finishes)."""
        self.measured: bool = False
        """Another meter has model-call instruments at all: the two above were observed."""


class InferenceWatch(SpanProcessor):
    """Sees the spans other libraries start under an open model span (see the module doc)."""

    def __init__(self) -> None:
        self.calls: dict[Any, Any] = {}
        """Open model spans -> their facts (``ledger.facts.Facts``), filed by the ledger."""
        self._under: dict[int, tuple[Any, Span]] = {}
        """Span id of a foreign span under a model call -> (that call's facts, the span)."""
        self._spans: dict[Any, Any] = {}
        self._tracers: weakref.WeakSet[Any] = weakref.WeakSet()
        self._meters: weakref.WeakSet[Any] = weakref.WeakSet()
        """The SDK meter providers in use (each plugin's and the global one)."""

    def watch(self, providers: Iterable[Any], meters: Iterable[Any]) -> None:
        """Added (once) to each SDK tracer provider given; the SDK meter providers kept."""
        for provider in providers:
            add = getattr(provider, "add_span_processor", None)
            if add is None:
                continue
            with contextlib.suppress(Exception):
                if provider not in self._tracers:
                    add(self)
                    self._tracers.add(provider)
        for meter_provider in meters:
            if hasattr(meter_provider, "_meters"):
                with contextlib.suppress(TypeError):
                    self._meters.add(meter_provider)

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        if not self.calls:  # no model call open: the cost of every other span
            return
        try:
            self._started(span, parent_context)
        except Exception:  # another library's span of an unexpected shape: nothing seen
            return

    def _started(self, span: Span, parent_context: Context | None) -> None:
        parent = trace.get_current_span(parent_context)
        facts = self.calls.get(parent)
        if facts is None:
            facts = self._spans.get(parent)
        if facts is None:
            # By its id: a span standing for it (ADK's own, switched off, passes its context
            # through), or a wrapped one (OpenInference's, logfire's).
            span_id = parent.get_span_context().span_id
            found = self._under.get(span_id)
            facts = found[0] if found is not None else self._by_id(span_id)
        if facts is None:
            return
        scope = getattr(span.instrumentation_scope, "name", None) or "unknown"
        if scope in _OWN_SCOPES:
            return
        seen = facts.seen
        if seen is None:
            seen = facts.seen = Seen()
            seen.points = points_of(list(self._meters))
        self._spans[span] = facts
        self._under[span.context.span_id] = (facts, span)
        if seen.by is None and carries_inference(span.attributes):
            seen.by = scope

    def _by_id(self, span_id: int) -> Any:
        """The open model call whose span has this id (a few are open at a time)."""
        for live, facts in list(self.calls.items()):
            if live.get_span_context().span_id == span_id:
                return facts
        return None

    def on_end(self, span: ReadableSpan) -> None:
        if not self._under:
            return
        context = span.context
        found = self._under.pop(context.span_id, None) if context is not None else None
        if found is None:
            return
        facts, live = found
        self._spans.pop(live, None)
        seen = facts.seen
        if seen is not None and seen.by is None and carries_inference(span.attributes):
            scope = span.instrumentation_scope
            seen.by = getattr(scope, "name", None) or "unknown"

    def decide(self, facts: Any, seen: Seen) -> None:
        """A model call others started spans under is done (the ledger no longer watches
        it): its foreign spans forgotten, its metrics decided from the points received."""
        if self._under:
            for key, (owner, live) in list(self._under.items()):
                if owner is facts:
                    del self._under[key]
                    self._spans.pop(live, None)
        if seen.points is not None:
            now = points_of(list(self._meters))
            seen.tokens = now[0] != seen.points[0]
            seen.duration = now[1] != seen.points[1]
            seen.measured = bool(now[0] or now[1])
            seen.points = None

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def points_of(providers: Iterable[Any]) -> Points:
    """The points held by each token-usage and duration instrument another meter (not
    adk-otel's, not ADK's) made on these SDK meter providers. Read off the SDK's own
    bookkeeping: an instrument that exists and received a point shows a changed value."""
    tokens: list[tuple[int, Any]] = []
    durations: list[tuple[int, Any]] = []
    for provider in providers:
        with contextlib.suppress(Exception):
            _instrument_points(provider, tokens, durations)
    return tuple(tokens), tuple(durations)


def _instrument_points(
    provider: Any, tokens: list[tuple[int, Any]], durations: list[tuple[int, Any]]
) -> None:
    meters = getattr(provider, "_meters", None)
    if not meters:
        return
    storages = provider._measurement_consumer._reader_storages.values()
    for meter in list(meters.values()):
        if meter._instrumentation_scope.name in _OWN_SCOPES:
            continue
        for instrument in list(meter._instrument_id_instrument.values()):
            name = getattr(instrument, "name", None)
            if name in TOKEN_METRICS:
                into = tokens
            elif name in DURATION_METRICS:
                into = durations
            else:
                continue
            into.append((id(instrument), _held(instrument, storages)))


def _held(instrument: Any, storages: Iterable[Any]) -> tuple[Any, ...]:
    """What the SDK aggregated for ``instrument`` so far, per reader and attribute set."""
    held: list[Any] = []
    for storage in storages:
        for match in storage._instrument_view_instrument_matches.get(instrument, ()):
            for aggregation in list(match._attributes_aggregation.values()):
                value = aggregation._value
                held.append((id(aggregation), tuple(value) if isinstance(value, list) else value))
    return tuple(held)


NAMED_WITHOUT_TOKEN_USAGE = frozenset({"opentelemetry-instrumentation-openai-v2"})
"""Named recorders of the metrics believed to record no token usage of ADK's calls, where it
cannot be seen (openai-v2 2.x before ``opentelemetry-util-genai`` 1.1 records the duration only:
LiteLLM asks the openai SDK for the raw response)."""


def duration_recorded_elsewhere(facts: Any) -> bool:
    """A model call whose duration another meter recorded: counted once, there. Seen where
    another library started a span under the call and model-call instruments of another meter
    are in sight, else believed of the recorder named at its opening."""
    seen: Seen | None = facts.seen
    if seen is not None and seen.measured:
        return seen.duration
    return sc.ADK_INFERENCE_METRICS_RECORDED_BY in facts.attributes


def usage_recorded_elsewhere(facts: Any) -> bool:
    """A model call whose token usage another meter recorded (as the duration, above)."""
    seen: Seen | None = facts.seen
    if seen is not None and seen.measured:
        return seen.tokens
    recorder = facts.attributes.get(sc.ADK_INFERENCE_METRICS_RECORDED_BY)
    return recorder is not None and recorder not in NAMED_WITHOUT_TOKEN_USAGE


WATCH = InferenceWatch()
"""The one watch, shared by every plugin of the process (a span processor stays on its
provider for the provider's life)."""


def watch(tracer_provider: Any, meter_provider: Any) -> None:
    """Watch model calls' spans on ``tracer_provider`` and the global tracer provider, and
    their metric points on ``meter_provider`` and the global meter provider."""
    WATCH.watch(
        (tracer_provider, trace.get_tracer_provider()),
        (meter_provider, metrics.get_meter_provider()),
    )
