"""Roll-ups, metrics and end-of-span content events, kept beside the span ledger.

:class:`TelemetryLedger` extends the plugin's :class:`~adk_otel.ledger.spans.Ledger`
where a span starts (``_started``), is concluded (``_concluded``) and ends
(the ledger's ``wrap_up`` and ``after_end`` steps of ``_finish``, the one place
every span ends), so spans ADK never closes (swept, cancelled, closed early)
get their numbers too:

* **Roll-ups.** Model-call token usage and model/tool call counts are added to
  every agent and invocation span above the call and written as that span
  ends (each span's facts, facts.py). The walk follows ``Entry.parent`` and
  hops from an ``AgentTool``'s nested run to the calling tool span, so callers
  include sub-agents' spend.
* **Metrics** (only with a meter provider): recorded as each span ends, by
  the instruments of metrics.py.
* **Content events** (content capture in an EVENT mode): one span event per
  span, emitted as it ends, with everything captured for it; a model call's
  is the details event, a log record when a logger is set (``pipeline/details.py``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.util.types import AttributeValue

from .. import semconv as sc
from ..pipeline.details import DetailsLog, structured
from ..semconv import Outcome
from ..util import sanitize
from . import inference, metrics
from .facts import INVOCATION, MODEL, ROLLUP_KINDS, TOOL, Facts, dimensions
from .inference import WATCH, Seen, usage_recorded_elsewhere
from .metrics import Instruments
from .spans import AfterEnd, Conclusion, Entry, Ledger, WrapUp, error_type

_INFERENCE_EVENT_KEYS = (
    sc.GEN_AI_OPERATION_NAME,
    sc.GEN_AI_PROVIDER_NAME,
    sc.GEN_AI_REQUEST_MODEL,
    sc.SERVER_ADDRESS,
    sc.SERVER_PORT,
)


_NONE: tuple[str, ...] = ()

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
    facts: Facts, outcome: Outcome, error: BaseException | None, reason: str | None
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


def _since_start(entry: Entry, facts: Facts, now: int) -> float | None:
    """Seconds since ``entry``'s span started: from the metric clock when
    metrics are on, else from the span's own start time."""
    if facts.started:
        return (now - facts.started) / 1e9
    start = getattr(entry.span, "start_time", None)
    return (time.time_ns() - start) / 1e9 if isinstance(start, int) else None


def _category(extra: Mapping[str, AttributeValue] | None) -> str:
    """An ERROR span's ``adk.error.category`` (``other`` when none was given)."""
    found = extra.get(sc.ADK_ERROR_CATEGORY) if extra else None
    return found if isinstance(found, str) else "other"


def rollups_over(entry: Entry | None) -> tuple[Facts, ...]:
    """The agent and invocation spans a span opened under ``entry`` (its
    parent, or for an ``AgentTool``'s nested run the calling tool) rolls up
    to: ``entry``'s own, when it is one, and those above it. Entries that
    ended (no facts) are climbed past. Kept per span, so a model or tool call
    adds to its totals without walking the tree."""
    while entry is not None:
        found: Facts | None = entry.facts
        if found is not None:
            return (found, *found.above) if found.kind in ROLLUP_KINDS else found.above
        entry = entry.parent
    return ()


def layer_usage(response: Mapping[str, AttributeValue]) -> dict[str, AttributeValue]:
    """A model response's attributes for a span whose inference another recorder's span is:
    its token usage under adk-otel's own names (``adk.usage.*``, which backends do not add up
    as inferences), everything else as it is."""
    rollup = sc.ROLLUP_USAGE
    return {rollup.get(key, key): value for key, value in response.items()}


def _become_layer(
    entry: Entry, facts: Facts, seen: Seen, response: Mapping[str, AttributeValue]
) -> dict[str, AttributeValue]:
    """The model span becomes the ADK layer around the inference another library's span
    under it records: named ``call_llm``, CHAIN, no operation name (the API has no removal:
    the SDK span's attribute map is edited; another SDK's span keeps it), the recorder named
    by its scope, its usage as ``adk.usage.*``."""
    span = entry.span
    span.update_name(f"{sc.OP_CALL_LLM} {facts.attributes.get(sc.GEN_AI_REQUEST_MODEL, '')}")
    written = getattr(span, "_attributes", None)
    if written is not None and sc.GEN_AI_OPERATION_NAME in written:
        with contextlib.suppress(Exception):
            del written[sc.GEN_AI_OPERATION_NAME]
    return {
        **layer_usage(response),
        sc.OPENINFERENCE_SPAN_KIND: sc.OI_CHAIN,
        sc.ADK_INFERENCE_RECORDED_BY: sanitize.clean(seen.by or ""),
    }


class TelemetryLedger(Ledger):
    """A :class:`Ledger` that also rolls usage up, records metrics and emits
    deferred content events (see the module doc)."""

    # The ledger's switches and steps this class sets (declared again: set here too).
    records_all: bool
    durations: bool
    on_conclude: bool
    wrap_up: WrapUp
    after_end: AfterEnd | None

    def __init__(self, tracer: trace.Tracer, instruments: Instruments | None = None) -> None:
        self._details: DetailsLog | None = None
        super().__init__(tracer)
        self.wrap_up = self._wrap_up
        self.retarget(tracer, instruments)
        self._tools_by_span: dict[int, Entry] = {}

    @property
    def details(self) -> DetailsLog | None:
        """Where model calls' details events go as log records; None: span events."""
        return self._details

    @details.setter
    def details(self, log: DetailsLog | None) -> None:
        self._details = log
        self.on_conclude = log is not None

    def retarget(self, tracer: trace.Tracer, instruments: Instruments | None = None) -> None:
        super().retarget(tracer)
        self.instruments = instruments
        self.durations = instruments is not None
        self.after_end = self._ended if instruments is not None else None
        # Metrics count sampled-out operations too, with their full dimensions.
        self.records_all = instruments is not None or not self._follows_parent

    def watch_inferences(self, tracer_provider: Any) -> None:
        """See what other libraries record of each model call (ledger/inference.py) on the
        providers in use: ``tracer_provider``, this ledger's meter provider, the global ones."""
        instruments = self.instruments
        inference.watch(tracer_provider, instruments.provider if instruments else None)

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
        kind = attributes.get(sc.ADK_SPAN_KIND, "")
        if kind.__class__ is not str:
            kind = str(kind)
        up = entry.parent
        if up is None and kind == INVOCATION and self._tools_by_span:
            up = self._calling_tool(parent_context)
        # rollups_over(up) written out for the usual case, an open parent.
        found = up.facts if up is not None else None
        if found is not None:
            above = (found, *found.above) if found.kind in ROLLUP_KINDS else found.above
        else:
            above = rollups_over(up) if up is not None else ()
        facts = Facts(kind, above, attributes)  # positional: see Entry
        if self.instruments is not None:
            facts.started = time.perf_counter_ns()
        entry.facts = facts
        if kind == MODEL:
            for totals in facts.above:
                totals.model_calls += 1
            if entry.recording:  # what others record of it is seen while it runs
                WATCH.calls[entry.span] = facts
        elif kind == TOOL:
            for totals in facts.above:
                totals.tool_calls += 1
            # A sampled-out tool sharing its parent's span has no id of its own
            # (and nothing under it is recorded): nothing to find it by.
            span_id = entry.span.get_span_context().span_id
            if span_id and (entry.recording or not self._follows_parent):
                self._tools_by_span[span_id] = entry

    def retype(self, entry: Entry, attributes: Mapping[str, AttributeValue]) -> None:
        super().retype(entry, attributes)
        facts: Facts | None = entry.facts
        opened = entry.opened_with or {}
        kind = str(opened.get(sc.ADK_SPAN_KIND, ""))
        if facts is None or facts.kind == kind:
            return
        facts.kind, facts.attributes = kind, opened
        if kind == TOOL:
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

    def responded(
        self, entry: Entry, attributes: Mapping[str, AttributeValue]
    ) -> Mapping[str, AttributeValue]:
        """A model call's final response attributes (usage, response model): rolled up, its
        metrics recorded unless another recorder has them; returned as the span is to carry
        them (``adk.usage.*`` where another recorder's span is the call's inference)."""
        facts: Facts | None = entry.facts
        if facts is None:
            return attributes
        span = entry.span
        calls = WATCH.calls
        if span in calls:
            del calls[span]
        seen = facts.seen
        if seen is not None:
            WATCH.decide(facts, seen)
        rollup = sc.ROLLUP_USAGE
        usage = [
            (rollup[k], v) for k, v in attributes.items() if k in rollup and v.__class__ is int
        ]
        if usage:
            for totals in facts.above:
                tokens = totals.tokens
                if tokens is None:
                    tokens = totals.tokens = {}
                for total, v in usage:
                    if total in tokens:
                        tokens[total] += v
                    else:
                        tokens[total] = v
        facts.response_model = attributes.get(sc.GEN_AI_RESPONSE_MODEL)
        facts.response = attributes
        instruments = self.instruments
        if (
            instruments is not None
            and instruments.model_calls
            and not usage_recorded_elsewhere(facts)
        ):
            metrics.record_usage(instruments, facts, attributes)
        if sc.ADK_INFERENCE_RECORDED_BY in facts.attributes:
            return layer_usage(attributes)
        if seen is not None and seen.by is not None:
            return _become_layer(entry, facts, seen, attributes)
        return attributes

    def chunk(self, entry: Entry, *, final: bool = False) -> None:
        """A streamed model response arrived: a partial chunk, or (``final``)
        the final response, which counts as the first and only chunk of a
        streamed call that sent no partial one. Sets the time to first chunk
        on the span; the chunk metrics are recorded as the span ends."""
        facts: Facts | None = entry.facts
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
        facts: Facts | None = entry.facts
        if facts is None:
            return
        if facts.event is None:
            facts.event = {}
        facts.event_name = name
        facts.event.update(attributes)

    def _concluded(
        self, entry: Entry, outcome: Outcome, error: BaseException | None, reason: str | None
    ) -> None:
        """A model call's details record goes out (or waits for its tool-call
        ids) at its conclusion, before the response event that links it: on
        some ADK releases the span ends only after that event."""
        details = self._details
        if details is None:
            return
        facts: Facts | None = entry.facts
        if facts is None or facts.kind != MODEL or facts.event is None:
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

    def _ended(
        self,
        facts: Facts,
        outcome: Outcome,
        error: BaseException | None,
        reason: str | None,
        extra: Mapping[str, AttributeValue] | None,
        pending: Conclusion | None,
    ) -> None:
        instruments = self.instruments
        if instruments is None:
            return
        try:
            category = _category(extra) if outcome is Outcome.ERROR else None
            ended = pending.end_perf if pending is not None else None
            metrics.record_end(instruments, facts, outcome, error, reason, category, extra, ended)
        except Exception:
            self._failed("recording a span's metrics")

    def _count_failure(self, facts: Facts, extra: Mapping[str, AttributeValue] | None) -> None:
        """An ERROR span: counted on every agent and invocation span above it."""
        category = _category(extra)
        for totals in facts.above:
            totals.errors += 1
            if totals.categories is None:
                totals.categories = set()
            totals.categories.add(category)

    def _wrap_up(
        self,
        entry: Entry,
        facts: Facts,
        outcome: Outcome,
        error: BaseException | None,
        reason: str | None,
        extra: Mapping[str, AttributeValue] | None,
    ) -> Mapping[str, AttributeValue] | None:
        """A span about to end: its failure counted above it, its roll-up
        attributes (with ``extra``), its content event emitted."""
        if outcome is Outcome.ERROR:
            self._count_failure(facts, extra)
        if facts.kind == MODEL:
            span = entry.span
            calls = WATCH.calls
            if span in calls:  # ended without a response (an error, a cancellation)
                del calls[span]
                seen = facts.seen
                if seen is not None:
                    WATCH.decide(facts, seen)
        elif facts.kind == TOOL:
            span_id = entry.span.get_span_context().span_id
            if self._tools_by_span.get(span_id) is entry:
                del self._tools_by_span[span_id]
        span = entry.span
        rollup: dict[str, AttributeValue] | None = None
        if facts.kind in ROLLUP_KINDS and entry.recording:
            rollup = {
                sc.ADK_MODEL_CALL_COUNT: facts.model_calls,
                sc.ADK_TOOL_CALL_COUNT: facts.tool_calls,
                sc.ADK_ERROR_COUNT: facts.errors,
                sc.ADK_ERROR_CATEGORIES: _NONE
                if facts.categories is None
                else tuple(sorted(facts.categories)),
                **(facts.tokens or {}),
            }
        details = self._details
        if facts.event is not None:
            event = facts.event
            if facts.kind == MODEL and details is not None:
                start = facts.attributes
                details.emit_or_hold(
                    span,
                    _details_record(facts, outcome, error, reason),
                    start.get(sc.ADK_INVOCATION_ID),
                    start.get(sc.GEN_AI_AGENT_NAME),
                )
            else:
                if facts.kind == MODEL:
                    event = {**dimensions(facts, _INFERENCE_EVENT_KEYS), **event}
                span.add_event(facts.event_name, event)
        if facts.kind == INVOCATION and details is not None:
            # Records still waiting for tool-call ids go out without them.
            details.flush(facts.attributes.get(sc.ADK_INVOCATION_ID))
        if extra:
            return {**rollup, **extra} if rollup else extra
        return rollup
