"""Roll-ups, metrics and end-of-span content events, kept beside the span ledger.

:class:`TelemetryLedger` extends the plugin's :class:`~adk_otel.ledger.Ledger`
at ``start`` and ``_finish``, the one place every span ends, so spans ADK never
closes (swept, cancelled, closed early) get their numbers too:

* **Roll-ups.** Model-call token usage and model/tool call counts are added to
  every agent and invocation span above the call and written as that span
  ends. The walk follows ``Entry.parent`` and hops from an ``AgentTool``'s
  nested run to the calling tool span, so callers include sub-agents' spend.
* **Metrics** (only with a meter provider), in the GenAI conventions' names,
  units and bucket advice: ``gen_ai.client.operation.duration``,
  ``gen_ai.client.token.usage``, ``gen_ai.invoke_agent.duration``,
  ``gen_ai.execute_tool.duration`` for operations that ended ok or in error
  (with ``error.type``), and ``adk.invocation.count`` for every run by outcome;
  for streamed model calls ``gen_ai.client.operation.time_to_first_chunk`` and
  ``.time_per_output_chunk`` (ADK records neither, so these are always adk-otel's).
  Under ``OTEL_SEMCONV_STABILITY_OPT_IN`` (stability.py) the model-call ones take
  the current conventions' ``gen_ai.client.inference.*`` names and token counters.
* **Content events** (content capture in an EVENT mode): one span event per
  span, emitted as it ends, with everything captured for it; a model call's
  is the details event, a log record when a logger is set (``details.py``).

ADK records the four ``gen_ai`` streams itself (meter scope
``gcp.vertex.agent``, global meter provider). To avoid doubles, ADK's meter is
switched off there through the SDK's meter configurator whenever adk-otel
records them; where it cannot be, or ``ADK_OTEL_KEEP_ADK_METRICS=true`` keeps
it, adk-otel leaves those streams to ADK and records ``adk.invocation.count``
only, plus, under the opt-in, the model-call instruments (ADK never uses their
current names).
"""

from __future__ import annotations

import contextlib
import logging
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import metrics, trace
from opentelemetry.util.types import AttributeValue

from . import adk_scope, env
from . import semconv as sc
from .details import DetailsLog, structured
from .ledger import Entry, Ledger, error_type
from .redact import guarded
from .semconv import Outcome
from .version import __version__

logger: logging.Logger = guarded(logging.getLogger(__name__))

KEEP_ADK_METRICS_ENV = "ADK_OTEL_KEEP_ADK_METRICS"
_SUPPRESSING = "_adk_otel_suppresses_adk_meter"

# Bucket advice from the GenAI metric conventions.
DURATION_BUCKETS = (
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
)  # fmt: skip
AGENT_DURATION_BUCKETS = (
    0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 51.2, 102.4, 204.8, 409.6,
)  # fmt: skip
TOKEN_BUCKETS = (
    1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
)  # fmt: skip

_AGENT, _MODEL, _TOOL, _INVOCATION = (
    sc.SpanKind.AGENT.value,
    sc.SpanKind.MODEL.value,
    sc.SpanKind.TOOL.value,
    sc.SpanKind.INVOCATION.value,
)
_ROLLUP_KINDS = (_AGENT, _INVOCATION)
# Span attributes each metric keeps as its own dimensions.
_DIMENSIONS = {
    _MODEL: (
        sc.GEN_AI_OPERATION_NAME,
        sc.GEN_AI_PROVIDER_NAME,
        sc.GEN_AI_REQUEST_MODEL,
        sc.SERVER_ADDRESS,
        sc.SERVER_PORT,
    ),
    _AGENT: (sc.GEN_AI_AGENT_NAME, sc.GEN_AI_REQUEST_MODEL),
    _TOOL: (sc.GEN_AI_TOOL_NAME, sc.GEN_AI_TOOL_TYPE, sc.GEN_AI_AGENT_NAME),
    _INVOCATION: (sc.ADK_APP_NAME,),
}
_INFERENCE_EVENT_KEYS = (
    sc.GEN_AI_OPERATION_NAME,
    sc.GEN_AI_PROVIDER_NAME,
    sc.GEN_AI_REQUEST_MODEL,
    sc.SERVER_ADDRESS,
    sc.SERVER_PORT,
)


_NONE: tuple[str, ...] = ()


def _dimensions(facts: _Facts, keys: tuple[str, ...] | None = None) -> dict[str, AttributeValue]:
    """A span's metric (or event) attributes, read from its start attributes."""
    start = facts.attributes
    keys = _DIMENSIONS.get(facts.kind, ()) if keys is None else keys
    dims = {k: start[k] for k in keys if k in start}
    if facts.response_model is not None and facts.kind == _MODEL:
        dims[sc.GEN_AI_RESPONSE_MODEL] = facts.response_model
    return dims


# -- instruments -----------------------------------------------------------------


class Instruments:
    """The metric instruments of one meter provider, created once per
    conventions version (``latest``: ``OTEL_SEMCONV_STABILITY_OPT_IN``)."""

    def __init__(self, meter: metrics.Meter, *, overlapping: bool, latest: bool = False) -> None:
        self.overlapping: bool = overlapping
        """False when ADK records its GenAI streams itself."""
        self.latest: bool = latest
        self.invocations: metrics.Counter = meter.create_counter(
            sc.METRIC_INVOCATION_COUNT,
            unit="{invocation}",
            description="Agent runs (Runner.run_async / run_live calls), by outcome.",
        )
        self.failures: metrics.Counter = meter.create_counter(
            sc.METRIC_FAILURE_COUNT,
            unit="{failure}",
            description="Spans that ended in error, by layer and failure category.",
        )
        # ADK records no streaming metrics: these two are adk-otel's in any case.
        self.time_to_first_chunk: metrics.Histogram = meter.create_histogram(
            sc.METRIC_CLIENT_INFERENCE_TIME_TO_FIRST_CHUNK
            if latest
            else sc.METRIC_CLIENT_TIME_TO_FIRST_CHUNK,
            unit="s",
            description="Time to receive the first chunk of a streamed model response.",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
        )
        self.time_per_output_chunk: metrics.Histogram = meter.create_histogram(
            sc.METRIC_CLIENT_INFERENCE_TIME_PER_OUTPUT_CHUNK
            if latest
            else sc.METRIC_CLIENT_TIME_PER_OUTPUT_CHUNK,
            unit="s",
            description="Time between consecutive chunks of a streamed model response.",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
        )
        self.token_usage: metrics.Histogram | None = None
        self.usage: dict[str, metrics.Counter] = {}
        """Span usage attribute -> its usage counter (latest conventions)."""
        self.per_call: dict[str, metrics.Histogram] = {}
        """Span usage attribute -> its per-call histogram (latest conventions)."""
        self.model_calls: bool = overlapping or latest
        """Whether model-call durations and tokens are recorded: the latest
        conventions' names are never ADK's, so they are recorded even when
        ADK keeps its own (earlier-named) streams."""
        if latest:
            self.operation_duration: metrics.Histogram = meter.create_histogram(
                sc.METRIC_CLIENT_INFERENCE_DURATION,
                unit="s",
                description="GenAI inference operation duration.",
                explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
            )
            self.usage = {
                attribute: meter.create_counter(name, unit="{token}", description=description)
                for attribute, name, description in _USAGE_COUNTERS
            }
            self.per_call = {
                attribute: meter.create_histogram(
                    name,
                    unit="{token}",
                    description=description,
                    explicit_bucket_boundaries_advisory=TOKEN_BUCKETS,
                )
                for attribute, name, description in _PER_CALL_HISTOGRAMS
            }
        elif overlapping:
            self.operation_duration = meter.create_histogram(
                sc.METRIC_CLIENT_OPERATION_DURATION,
                unit="s",
                description="GenAI operation duration.",
                explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
            )
            self.token_usage = meter.create_histogram(
                sc.METRIC_CLIENT_TOKEN_USAGE,
                unit="{token}",
                description="Number of input and output tokens used.",
                explicit_bucket_boundaries_advisory=TOKEN_BUCKETS,
            )
        if not overlapping:
            return
        self.agent_duration: metrics.Histogram = meter.create_histogram(
            sc.METRIC_INVOKE_AGENT_DURATION,
            unit="s",
            description="The end-to-end duration of a single agent invocation.",
            explicit_bucket_boundaries_advisory=AGENT_DURATION_BUCKETS,
        )
        self.tool_duration: metrics.Histogram = meter.create_histogram(
            sc.METRIC_EXECUTE_TOOL_DURATION,
            unit="s",
            description="The duration of a single tool execution.",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
        )


# The latest conventions' token instruments: (span usage attribute, name, description).
# Under the opt-in the span carries cache writes as ``cache_write`` (stability.py).
_USAGE_COUNTERS = (
    (
        sc.GEN_AI_USAGE_INPUT_TOKENS,
        sc.METRIC_USAGE_INPUT_TOKENS,
        "The number of input (prompt) tokens used, including cached tokens.",
    ),
    (
        sc.GEN_AI_USAGE_OUTPUT_TOKENS,
        sc.METRIC_USAGE_OUTPUT_TOKENS,
        "The number of output (completion) tokens used, including reasoning tokens.",
    ),
    (
        sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
        sc.METRIC_USAGE_CACHE_READ_INPUT_TOKENS,
        "The number of input tokens served from a provider-managed cache.",
    ),
    (
        sc.GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS,
        sc.METRIC_USAGE_CACHE_WRITE_INPUT_TOKENS,
        "The number of input tokens written to a provider-managed cache.",
    ),
    (
        sc.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS,
        sc.METRIC_USAGE_REASONING_OUTPUT_TOKENS,
        "The number of output tokens used for reasoning.",
    ),
)
_PER_CALL_HISTOGRAMS = (
    (
        sc.GEN_AI_USAGE_INPUT_TOKENS,
        sc.METRIC_OPERATION_INPUT_TOKENS,
        "The number of input (prompt) tokens used per inference operation.",
    ),
    (
        sc.GEN_AI_USAGE_OUTPUT_TOKENS,
        sc.METRIC_OPERATION_OUTPUT_TOKENS,
        "The number of output (completion) tokens used per inference operation.",
    ),
)


_instruments: weakref.WeakKeyDictionary[Any, dict[bool, Instruments]] = weakref.WeakKeyDictionary()


def resolve_instruments(
    explicit: metrics.MeterProvider | None, *, latest: bool = False
) -> Instruments | None:
    """Instruments on the provider passed in, else the global one, in the
    latest conventions' names when ``latest``; ``None`` (no metric work at
    all) when neither is a real provider."""
    provider = explicit if explicit is not None else metrics.get_meter_provider()
    if not _is_real(provider):
        return None
    try:
        by_version = _instruments.get(provider)
    except TypeError:
        by_version = None
    cached = by_version.get(latest) if by_version is not None else None
    if cached is not None:
        return cached
    overlapping = not _adk_meter_active()
    created = Instruments(
        provider.get_meter(sc.INSTRUMENTATION_SCOPE, __version__),
        overlapping=overlapping,
        latest=latest,
    )
    with contextlib.suppress(TypeError):  # a provider that takes no weak reference
        _instruments.setdefault(provider, {})[latest] = created
    return created


def _is_real(provider: Any) -> bool:
    # The API's placeholders: the proxy before a provider is set, and no-op.
    return provider is not None and type(provider).__name__ not in (
        "_ProxyMeterProvider",
        "ProxyMeterProvider",
        "NoOpMeterProvider",
    )


def keep_adk_metrics() -> bool:
    return env.flag(KEEP_ADK_METRICS_ENV, logger.warning) is True


def _adk_meter_active() -> bool:
    """Whether ADK's own GenAI metrics reach a real provider (after trying to
    switch them off there)."""
    provider = metrics.get_meter_provider()
    if not _is_real(provider):
        return False  # ADK's meter records into nothing
    if keep_adk_metrics():
        return True
    return not suppress_adk_metrics(provider)


def suppress_adk_metrics(provider: Any) -> bool:
    """Switch ADK's meter (scope ``gcp.vertex.agent``) off on ``provider``;
    False when this provider or SDK cannot."""
    try:
        from opentelemetry.sdk.metrics._internal import _MeterConfig
    except ImportError:
        switched = False
    else:
        switched = adk_scope.switch_off(
            provider,
            "meter",
            scopes=frozenset({sc.ADK_SCOPE}),
            disabled=_MeterConfig(is_enabled=False),
            default=_MeterConfig,
            marker=_SUPPRESSING,
        )
    if not switched:
        logger.info(
            "adk-otel: cannot switch ADK's own metrics off on %s; leaving the GenAI "
            "duration and token metrics to ADK",
            type(provider).__name__,
        )
    return switched


_DETAILS_START_KEYS = frozenset(
    {
        sc.GEN_AI_OPERATION_NAME,
        sc.GEN_AI_PROVIDER_NAME,
        sc.GEN_AI_CONVERSATION_ID,
        sc.GEN_AI_OUTPUT_TYPE,
        sc.SERVER_ADDRESS,
        sc.SERVER_PORT,
    }
)


def _details_record(
    facts: _Facts, outcome: Outcome, error: BaseException | None, reason: str | None
) -> dict[str, Any]:
    """A model call's details event as a log record's attributes: the call's
    request and response attributes, and its content as structured values."""
    record: dict[str, Any] = {
        k: v
        for k, v in facts.attributes.items()
        if k in _DETAILS_START_KEYS or k.startswith("gen_ai.request.")
    }
    record.update((k, v) for k, v in (facts.response or {}).items() if k.startswith("gen_ai."))
    if facts.first_chunk is not None:
        record[sc.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK] = facts.first_chunk
    if outcome is Outcome.ERROR:
        record[sc.ERROR_TYPE] = error_type(error) if error is not None else reason or "_OTHER"
    record.update((k, structured(v)) for k, v in (facts.event or {}).items())
    return record


def _since_start(entry: Entry, facts: _Facts, now: int) -> float | None:
    """Seconds since ``entry``'s span started: from the metric clock when
    metrics are on, else from the span's own start time."""
    if facts.started:
        return (now - facts.started) / 1e9
    start = getattr(entry.span, "start_time", None)
    return (time.time_ns() - start) / 1e9 if isinstance(start, int) else None


def _record_latest_usage(
    instruments: Instruments,
    attributes: Mapping[str, AttributeValue],
    dims: Mapping[str, AttributeValue],
) -> None:
    """A model call's usage as the latest conventions' counters (by modality:
    ADK's usage gives none per category, so ``unknown``) and per-call histograms."""
    counted = {**dims, sc.GEN_AI_TOKEN_MODALITY: sc.TOKEN_MODALITY_UNKNOWN}
    for key, counter in instruments.usage.items():
        value = attributes.get(key)
        if isinstance(value, int):
            counter.add(value, counted)
    for key, histogram in instruments.per_call.items():
        value = attributes.get(key)
        if isinstance(value, int):
            histogram.record(value, dims)


# -- per-span bookkeeping ----------------------------------------------------------


def _rollups_over(entry: Entry | None) -> tuple[_Facts, ...]:
    """The agent and invocation spans a span opened under ``entry`` (its
    parent, or for an ``AgentTool``'s nested run the calling tool) rolls up
    to: ``entry``'s own, when it is one, and those above it. Entries that
    ended (no facts) are climbed past. Kept per span, so a model or tool call
    adds to its totals without walking the tree."""
    while entry is not None:
        found: _Facts | None = entry.facts
        if found is not None:
            return (found, *found.above) if found.kind in _ROLLUP_KINDS else found.above
        entry = entry.parent
    return ()


@dataclass(slots=True, eq=False)
class _Facts:
    kind: str
    above: tuple[_Facts, ...]
    """The agent and invocation spans this span's numbers roll up to, nearest
    first, found once as it starts (see _rollups_over)."""
    attributes: Mapping[str, AttributeValue]
    """The span's start attributes (the plugin's own dict, never changed)."""
    started: int = 0
    response_model: AttributeValue | None = None
    model_calls: int = 0
    tool_calls: int = 0
    tokens: dict[str, int] | None = None
    event: dict[str, AttributeValue] | None = None
    event_name: str = ""
    response: Mapping[str, AttributeValue] | None = None
    """A model call's final response attributes (for its details event)."""
    chunk_at: int = 0
    """``perf_counter_ns`` of the latest streamed chunk (0: none yet)."""
    first_chunk: float | None = None
    """Seconds from the request to the first streamed chunk."""
    chunk_gaps: list[float] | None = None
    """Seconds between consecutive streamed chunks (kept only for metrics)."""
    errors: int = 0
    """ERROR spans below this one (agent and invocation spans)."""
    categories: set[str] | None = None
    """Their distinct ``adk.error.category`` values."""


class TelemetryLedger(Ledger):
    """A :class:`Ledger` that also rolls usage up, records metrics and emits
    deferred content events (see the module doc)."""

    def __init__(self, tracer: trace.Tracer, instruments: Instruments | None = None) -> None:
        super().__init__(tracer)
        self.instruments = instruments
        self.details: DetailsLog | None = None
        """Where model calls' details events go as log records; None: span events."""
        self._tools_by_span: dict[int, Entry] = {}

    def retarget(self, tracer: trace.Tracer, instruments: Instruments | None = None) -> None:
        super().retarget(tracer)
        self.instruments = instruments

    def will_record(self, parent: Entry | None) -> bool:
        # Metrics count sampled-out operations too, with their full dimensions.
        # (Ledger.will_record written out: this runs in every opening hook.)
        return (
            self.instruments is not None
            or parent is None
            or parent.recording
            or not self._follows_parent
        )

    def _started(
        self,
        entry: Entry,
        attributes: Mapping[str, AttributeValue],
        parent_context: otel_context.Context | None,
    ) -> None:
        if not entry.recording and self._follows_parent and self.instruments is None:
            # Sampled out, and so is everything under it: no roll-ups to keep,
            # no metrics to record.
            return
        kind = str(attributes.get(sc.ADK_SPAN_KIND, ""))
        up = entry.parent
        if up is None and kind == _INVOCATION:
            up = self._calling_tool(parent_context)
        facts = _Facts(kind, _rollups_over(up), attributes)  # positional: see Entry
        if self.instruments is not None:
            facts.started = time.perf_counter_ns()
        entry.facts = facts
        if kind == _MODEL:
            for totals in facts.above:
                totals.model_calls += 1
        elif kind == _TOOL:
            for totals in facts.above:
                totals.tool_calls += 1
            # A sampled-out tool sharing its parent's span has no id of its own
            # (and nothing under it is recorded): nothing to find it by.
            span_id = entry.span.get_span_context().span_id
            if span_id and (entry.recording or not self._follows_parent):
                self._tools_by_span[span_id] = entry

    def retype(self, entry: Entry, attributes: Mapping[str, AttributeValue]) -> None:
        super().retype(entry, attributes)
        facts: _Facts | None = entry.facts
        opened = entry.opened_with or {}
        kind = str(opened.get(sc.ADK_SPAN_KIND, ""))
        if facts is None or facts.kind == kind:
            return
        facts.kind, facts.attributes = kind, opened
        if kind == _TOOL:
            for totals in facts.above:
                totals.tool_calls += 1
            span_id = entry.span.get_span_context().span_id
            if span_id and entry.recording:
                self._tools_by_span[span_id] = entry

    def _calling_tool(self, parent_context: otel_context.Context | None) -> Entry | None:
        if not self._tools_by_span:
            return None
        span_id = trace.get_current_span(parent_context).get_span_context().span_id
        return self._tools_by_span.get(span_id)

    def responded(self, entry: Entry, attributes: Mapping[str, AttributeValue]) -> None:
        """A model call's final response attributes (usage, response model)."""
        facts: _Facts | None = entry.facts
        if facts is None:
            return
        usage = [
            (k, v) for k, v in attributes.items() if k in sc.ROLLUP_USAGE and isinstance(v, int)
        ]
        if usage:
            for totals in facts.above:
                tokens = totals.tokens if totals.tokens is not None else {}
                for k, v in usage:
                    total = sc.ROLLUP_USAGE[k]
                    tokens[total] = tokens.get(total, 0) + v
                totals.tokens = tokens
        facts.response_model = attributes.get(sc.GEN_AI_RESPONSE_MODEL)
        facts.response = attributes
        instruments = self.instruments
        if instruments is None or not instruments.model_calls:
            return
        dims = _dimensions(facts)
        if instruments.latest:
            _record_latest_usage(instruments, attributes, dims)
            return
        assert instruments.token_usage is not None
        for key, token_type in (
            (sc.GEN_AI_USAGE_INPUT_TOKENS, "input"),
            (sc.GEN_AI_USAGE_OUTPUT_TOKENS, "output"),
        ):
            value = attributes.get(key)
            if value is not None:
                instruments.token_usage.record(
                    value,  # type: ignore[arg-type]
                    {**dims, sc.GEN_AI_TOKEN_TYPE: token_type},
                )

    def chunk(self, entry: Entry, *, final: bool = False) -> None:
        """A streamed model response arrived: a partial chunk, or (``final``)
        the final response, which counts as the first and only chunk of a
        streamed call that sent no partial one. Sets the time to first chunk
        on the span; the chunk metrics are recorded as the span ends."""
        facts: _Facts | None = entry.facts
        if facts is None:
            return
        if final and (facts.chunk_at or facts.attributes.get(sc.GEN_AI_REQUEST_STREAM) is not True):
            return
        now = time.perf_counter_ns()
        if facts.chunk_at:
            if self.instruments is not None:
                gaps = facts.chunk_gaps if facts.chunk_gaps is not None else []
                gaps.append((now - facts.chunk_at) / 1e9)
                facts.chunk_gaps = gaps
        else:
            facts.first_chunk = _since_start(entry, facts, now)
            if facts.first_chunk is not None and entry.span.is_recording():
                entry.span.set_attribute(sc.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK, facts.first_chunk)
        facts.chunk_at = now

    def add_event_attributes(
        self, entry: Entry, name: str, attributes: Mapping[str, AttributeValue]
    ) -> None:
        """Content for the span event emitted when ``entry`` ends."""
        facts: _Facts | None = entry.facts
        if facts is None:
            return
        if facts.event is None:
            facts.event = {}
        facts.event_name = name
        facts.event.update(attributes)

    def conclude(
        self,
        entry: Entry,
        outcome: Outcome,
        error: BaseException | None = None,
        reason: str | None = None,
        description: str | None = None,
        extra: Mapping[str, AttributeValue] | None = None,
        foreign: str | None = None,
    ) -> None:
        """As :meth:`Ledger.conclude`; a model call's details record goes out
        (or waits for its tool-call ids) now, before the response event that
        links it: on some ADK releases the span ends only after that event."""
        super().conclude(entry, outcome, error, reason, description, extra, foreign)
        details = self.details
        if details is None:
            return
        facts: _Facts | None = entry.facts
        if facts is None or facts.kind != _MODEL or facts.event is None:
            return
        try:
            start = facts.attributes
            details.emit_or_hold(
                entry.span,
                _details_record(facts, outcome, error, reason),
                start.get(sc.ADK_INVOCATION_ID),
                start.get(sc.GEN_AI_AGENT_NAME),
            )
        except Exception:
            self._failed("emitting a model call's details")
        facts.event = None

    def _finish(
        self,
        entry: Entry,
        outcome: Outcome,
        error: BaseException | None,
        reason: str | None,
        extra: Mapping[str, AttributeValue] | None = None,
        description: str | None = None,
    ) -> None:
        facts: _Facts | None = entry.facts
        entry.facts = None
        if facts is None or entry.ended:
            super()._finish(entry, outcome, error, reason, extra, description)
            return
        rollup: Mapping[str, AttributeValue] | None = None
        category: str | None = None
        try:
            if outcome is Outcome.ERROR:
                category = self._count_failure(facts, extra)
            rollup = self._wrap_up(entry, facts, outcome, error, reason)
        except Exception:
            self._failed("rolling up a span's totals")
        if extra:
            rollup = {**rollup, **extra} if rollup else extra
        super()._finish(entry, outcome, error, reason, rollup, description)
        if self.instruments is not None:
            try:
                ended = entry.pending.end_perf if entry.pending is not None else None
                self._record(facts, outcome, error, reason, category, extra, ended)
            except Exception:
                self._failed("recording a span's metrics")

    def _count_failure(self, facts: _Facts, extra: Mapping[str, AttributeValue] | None) -> str:
        """An ERROR span: counted on every agent and invocation span above it."""
        found = extra.get(sc.ADK_ERROR_CATEGORY) if extra else None
        category = found if isinstance(found, str) else "other"
        for totals in facts.above:
            totals.errors += 1
            if totals.categories is None:
                totals.categories = set()
            totals.categories.add(category)
        return category

    def _wrap_up(
        self,
        entry: Entry,
        facts: _Facts,
        outcome: Outcome,
        error: BaseException | None,
        reason: str | None,
    ) -> dict[str, AttributeValue] | None:
        """The roll-up attributes for a span about to end; emits its content event."""
        if facts.kind == _TOOL:
            span_id = entry.span.get_span_context().span_id
            if self._tools_by_span.get(span_id) is entry:
                del self._tools_by_span[span_id]
        span = entry.span
        rollup: dict[str, AttributeValue] | None = None
        if facts.kind in _ROLLUP_KINDS and entry.recording:
            rollup = {
                sc.ADK_MODEL_CALL_COUNT: facts.model_calls,
                sc.ADK_TOOL_CALL_COUNT: facts.tool_calls,
                sc.ADK_ERROR_COUNT: facts.errors,
                sc.ADK_ERROR_CATEGORIES: _NONE
                if facts.categories is None
                else tuple(sorted(facts.categories)),
                **(facts.tokens or {}),
            }
        details = self.details
        if facts.event is not None:
            event = facts.event
            if facts.kind == _MODEL and details is not None:
                start = facts.attributes
                details.emit_or_hold(
                    span,
                    _details_record(facts, outcome, error, reason),
                    start.get(sc.ADK_INVOCATION_ID),
                    start.get(sc.GEN_AI_AGENT_NAME),
                )
            else:
                if facts.kind == _MODEL:
                    event = {**_dimensions(facts, _INFERENCE_EVENT_KEYS), **event}
                span.add_event(facts.event_name, event)
        if facts.kind == _INVOCATION and details is not None:
            # Records still waiting for tool-call ids go out without them.
            details.flush(facts.attributes.get(sc.ADK_INVOCATION_ID))
        return rollup

    def _record(
        self,
        facts: _Facts,
        outcome: Outcome,
        error: BaseException | None,
        reason: str | None,
        category: str | None = None,
        extra: Mapping[str, AttributeValue] | None = None,
        ended: int | None = None,
    ) -> None:
        instruments = self.instruments
        assert instruments is not None
        dims = _dimensions(facts)
        if outcome is Outcome.ERROR:
            dims[sc.ERROR_TYPE] = error_type(error) if error is not None else reason or "_OTHER"
            failed = {**dims, sc.ADK_SPAN_KIND: facts.kind}
            failed[sc.ADK_ERROR_CATEGORY] = category or "other"
            retryable = extra.get(sc.ADK_ERROR_RETRYABLE) if extra else None
            if isinstance(retryable, bool):
                failed[sc.ADK_ERROR_RETRYABLE] = retryable
            instruments.failures.add(1, failed)
        if facts.kind == _INVOCATION:
            dims[sc.ADK_OUTCOME] = outcome._value_
            instruments.invocations.add(1, dims)
            return
        if outcome not in (Outcome.OK, Outcome.ERROR):
            return
        if facts.first_chunk is not None:
            # The conventions give the chunk metrics no error.type.
            chunk_dims = {k: v for k, v in dims.items() if k != sc.ERROR_TYPE}
            instruments.time_to_first_chunk.record(facts.first_chunk, chunk_dims)
            for gap in facts.chunk_gaps or ():
                instruments.time_per_output_chunk.record(gap, chunk_dims)
        seconds = ((ended or time.perf_counter_ns()) - facts.started) / 1e9
        if facts.kind == _MODEL:
            if instruments.model_calls:
                instruments.operation_duration.record(seconds, dims)
            return
        if not instruments.overlapping:
            return
        if facts.kind == _AGENT:
            instruments.agent_duration.record(seconds, dims)
        elif facts.kind == _TOOL:
            instruments.tool_duration.record(seconds, dims)
