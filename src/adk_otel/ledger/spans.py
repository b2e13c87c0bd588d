"""Span bookkeeping: open a span, end it exactly once, sweep what is left.

The ledger knows OpenTelemetry and nothing of ADK. Every span it opens is an
:class:`Entry` in a tree that mirrors the span tree; ending an entry first ends
its still-open descendants (as ``incomplete``, or ``cancelled`` when the
parent was cancelled), so a child never outlives its parent and a sweep at the
end of a run reaches everything ADK left open. Whichever closer gets there
first wins; later ones are no-ops.

An entry may also be made *current* (attached to the OpenTelemetry context) so
that spans other libraries start during a tool or model call become its
children. Detaching is done only when it is provably safe — the entry's
context is still the current one in the same ``contextvars.Context`` —
because a detach against a foreign token is what makes other instrumentations
log "Failed to detach context" and leave an ended span current.

A layer's terminal hook only *concludes* its entry (:meth:`Ledger.conclude`):
the outcome and the end time are fixed then, but the span stays open and
current until :meth:`Ledger.settle` (or any later closer) ends it, so code
that runs after the hook in the same layer still annotates a live span. An
entry that ended while its context was current elsewhere (another task's copy)
keeps its token, and :meth:`Ledger.unwind` detaches it later, in its own
context.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context.contextvars_context import ContextVarsRuntimeContext
from opentelemetry.sdk import trace as sdk_trace
from opentelemetry.trace import Span, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from ..semconv import ADK_CLOSE_REASON, ADK_ERROR_CATEGORY, ADK_OUTCOME, ERROR_TYPE, Outcome
from ..util import sanitize
from ..util.redact import guarded
from .facts import Facts

logger: logging.Logger = guarded(logging.getLogger(__name__))

_STATUS_OK = Status(StatusCode.OK)
_OK_ATTRIBUTES: Mapping[str, AttributeValue] = {ADK_OUTCOME: Outcome.OK.value}
_RUNTIME = getattr(otel_context, "_RUNTIME_CONTEXT", None)
_VAR: ContextVar[otel_context.Context] | None = (
    getattr(_RUNTIME, "_current_context", None)
    if type(_RUNTIME) is ContextVarsRuntimeContext
    else None
)
_current: Callable[[], otel_context.Context] = (
    _VAR.get if _VAR is not None else otel_context.get_current
)
current_context = _current
_attach: Callable[[otel_context.Context], Any] = (
    _VAR.set if _VAR is not None else otel_context.attach
)
"""The API's ``get_current`` and ``attach`` without their wrappers: with the
API's default runtime context (exactly its class, not a subclass that could
change them), the context variable it reads and sets, whose tokens it
resets; else the API's own functions. The ledger reads the current context
several times per span."""
_SDK_SPAN: type | None = getattr(sdk_trace, "_Span", None)
"""The SDK's span class: one it has just started records (``is_recording``
is ``end_time is None``), so its ``is_recording()`` is not asked."""
_ENTRY = "_adk_otel_entry"
"""Attribute of an entry's OpenTelemetry context naming the entry, so the
entry behind the current context is found in one lookup (see unwind)."""


def error_type(error: BaseException) -> str:
    """``error.type`` for an exception: the fully qualified class name."""
    try:
        cls = type(error)
        module, name = cls.__module__, cls.__qualname__
        qualified = name if module in ("builtins", None) else f"{module}.{name}"
        return sanitize.clean(qualified, 256)
    except Exception:
        return "_OTHER"


def record_exception(span: Span, error: BaseException) -> None:
    """The ``exception`` event, as the SDK records it, but with every value
    made safe first: the SDK's own ``record_exception`` calls ``str(error)``,
    which can raise, and copies the message whole, however large."""
    span.add_event(
        "exception",
        {
            "exception.type": error_type(error),
            "exception.message": sanitize.text(error),
            "exception.stacktrace": sanitize.stacktrace(error),
            "exception.escaped": "True",
        },
    )


@dataclass(slots=True)
class Conclusion:
    """The end a terminal hook decided, kept until the span really ends."""

    outcome: Outcome
    error: BaseException | None
    reason: str | None
    description: str | None
    extra: Mapping[str, AttributeValue] | None
    end_time: int
    """``time.time_ns()`` when it was decided: the span's end time."""
    end_perf: int
    """``time.perf_counter_ns()`` then, for durations measured in-process."""
    foreign: tuple[str, frozenset[str]] | None = None
    """``(prefix, keys)``: attributes under ``prefix`` that were not among
    ``keys`` at the conclusion are dropped at the end (see conclude)."""


@dataclass(eq=False, slots=True, weakref_slot=True)
class Entry:
    """One open (or just ended) span and its place in the tree."""

    # Made positionally, in this order, for every span: a class called by
    # keyword costs more (benchmarks/README.md, "Counted rather than timed").
    span: Span
    key: object
    parent: Entry | None
    anchor: Any = None
    """Strong reference to the object this entry is keyed on, so its ``id()``
    cannot be reused by another object while the span is open."""
    recording: bool = True
    """Whether the span records (False when its trace was sampled out): then
    nothing is written to it, only its bookkeeping is kept."""
    children: dict[Entry, None] = field(default_factory=dict)
    """The open children, in the order they opened: a dict, so a child that
    ends leaves it in constant time however many siblings are open (a list's
    ``remove`` searched and shifted them all: a cost that grew with a turn's
    parallel tool calls)."""
    ended: bool = False
    updates: int = 0
    """How many intermediate updates (streamed chunks) the span has seen."""
    opened_with: Mapping[str, AttributeValue] | None = None
    """The (clean) attributes the span was started with."""
    pending: Conclusion | None = None
    """How the span ends, once its terminal hook decided it (see conclude)."""
    facts: Facts | None = None
    """What the telemetry ledger keeps for this span while it is open
    (roll-up totals, metric clocks: see facts.py); ``None`` once it ended."""
    _attached: otel_context.Context | None = None
    _token: Any = None
    _context: otel_context.Context | None = None

    @property
    def context(self) -> otel_context.Context:
        """An OpenTelemetry context with this span as the current span (made
        once: every child span and attach of this entry reuses it)."""
        ctx = self._context
        if ctx is None:
            ctx = self._context = trace.set_span_in_context(self.span)
            # Weak: the entry holds its context, a strong link back would make
            # a cycle only the garbage collector frees, for every span.
            setattr(ctx, _ENTRY, weakref.ref(self))
        return ctx


Extra: TypeAlias = Mapping[str, AttributeValue] | None
WrapUp: TypeAlias = Callable[
    [Entry, Facts, Outcome, BaseException | None, str | None, Extra], Extra
]
"""Works out the attributes a span with facts ends with (roll-ups), ``Extra`` among them."""
AfterEnd: TypeAlias = Callable[
    [Facts, Outcome, BaseException | None, str | None, Extra, Conclusion | None], None
]
"""Called after a span with facts ended (metrics)."""


def _unchanged(
    entry: Entry,
    facts: Facts,
    outcome: Outcome,
    error: BaseException | None,
    reason: str | None,
    extra: Extra,
) -> Extra:
    """:data:`WrapUp` of a ledger that keeps nothing beside its spans."""
    return extra


class Ledger:
    """Opens spans on a tracer and ends each exactly once."""

    records_all: bool
    """Whether every span is built in full, whatever its parent
    (:meth:`will_record` read as ``records_all or parent is None or
    parent.recording``, without a call, in the hot hooks)."""
    durations: bool
    """Whether conclusions keep a ``perf_counter_ns`` end (for metrics)."""
    on_conclude: bool
    """Whether :meth:`_concluded` runs at each conclusion."""
    wrap_up: WrapUp
    """Works out the attributes a span with facts ends with (roll-ups)."""
    after_end: AfterEnd | None
    """Called after a span with facts ended (metrics), when set."""
    get: Callable[[object], Entry | None]
    """The open entry filed under a key, else None (the filing dict's own
    ``get``: the after hooks and the response events look entries up by key)."""

    def __init__(self, tracer: trace.Tracer) -> None:
        self._lock = threading.Lock()
        self.retarget(tracer)
        self._open: dict[object, Entry] = {}
        self.get = self._open.get
        self.concluded: int = 0
        """Entries concluded and not yet ended (see conclude)."""
        self.failures: int = 0
        """Times recording a span's outcome (or ending it) failed inside
        adk-otel; the span was ended all the same. Logged once, counted always."""
        self.ended: int = 0
        """Recording spans ended so far (the shutdown report counts them)."""
        self.durations = False
        self.wrap_up = _unchanged
        self.after_end = None
        self.on_conclude = False

    def __len__(self) -> int:
        return len(self._open)

    def start(
        self,
        key: object,
        name: str,
        *,
        parent: Entry | None = None,
        parent_context: otel_context.Context | None = None,
        kind: trace.SpanKind = trace.SpanKind.INTERNAL,
        attributes: Mapping[str, AttributeValue] | None = None,
        anchor: Any = None,
        links: Sequence[trace.Link] | None = None,
        clean: bool = False,
        current: bool = False,
        context_values: Mapping[str, object] | None = None,
    ) -> Entry:
        """Open a span under ``parent`` (else ``parent_context``, else the
        current context) and file it under ``key``. ``clean``: the name and
        the attribute values were made safe already (``sanitize``), so they
        are not checked again. ``current``: attached at once (:meth:`attach`),
        with ``context_values`` set in its context too (read by what runs under it)."""
        if not clean:
            name = sanitize.clean(name)
            attributes = sanitize.attributes(attributes)
        if parent is not None and not parent.recording and self._follows_parent:
            # A child of a sampled-out span is sampled out too (the sampler
            # follows the parent): it shares its parent's non-recording span
            # and context instead of asking the SDK for another.
            entry = Entry(parent.span, key, parent, anchor, False)
            if context_values:
                made = parent.context
                for name, value in context_values.items():
                    made = otel_context.set_value(name, value, made)
                setattr(made, _ENTRY, weakref.ref(entry))
                entry._context = made
            else:
                entry._context = parent.context
        else:
            # _context when made already: no property call (this runs for every span).
            ctx = (parent._context or parent.context) if parent is not None else parent_context
            span = self.tracer.start_span(
                name, context=ctx, kind=kind, attributes=attributes, links=links
            )
            recording = span.__class__ is _SDK_SPAN or span.is_recording()
            entry = Entry(span, key, parent, anchor, recording)
            if current:
                # Entry.context written out: made here for the attach below.
                made = trace.set_span_in_context(span)
                if context_values:
                    for name, value in context_values.items():
                        made = otel_context.set_value(name, value, made)
                entry._context = made
                setattr(made, _ENTRY, weakref.ref(entry))
        # No lock: each of these is one atomic operation, and a key names one
        # object, opened by one hook at a time (end_all copies under the lock).
        opened = self._open
        stale = opened.get(key)
        opened[key] = entry
        if parent is not None:
            parent.children[entry] = None
        if stale is not None:
            # The same key opened twice without a close: never leak the first.
            self._finish(stale, Outcome.INCOMPLETE, None, "reopened")
        entry.opened_with = attributes
        self._started(entry, attributes or {}, parent_context)
        if current:
            made = entry._context or entry.context
            entry._token = _attach(made)
            entry._attached = made
        return entry

    def alias(self, key: object, entry: Entry) -> None:
        """File an open entry under a second key too (a tool node's span is
        also its tool call's); :meth:`unalias` removes it."""
        with self._lock:
            if not entry.ended:
                self._open[key] = entry

    def retype(self, entry: Entry, attributes: Mapping[str, AttributeValue]) -> None:
        """An open span turned out to stand for another layer too (a tool
        node's span is its tool call's): ``attributes`` written over its own."""
        clean = sanitize.attributes(attributes) or {}
        if entry.recording and not entry.ended:
            entry.span.set_attributes(clean)
        entry.opened_with = {**(entry.opened_with or {}), **clean}

    def unalias(self, key: object, entry: Entry) -> None:
        with self._lock:
            if self._open.get(key) is entry and key != entry.key:
                del self._open[key]

    def retarget(self, tracer: trace.Tracer) -> None:
        """Open later spans on ``tracer``; spans already open stay here."""
        self.tracer = tracer
        sampler = getattr(tracer, "sampler", None)
        description = sampler.get_description() if sampler is not None else ""
        self._follows_parent = "localParentNotSampled:AlwaysOffSampler" in description
        """Whether a child of an unsampled span is never recorded (the SDK's
        ParentBased samplers, the default): then its attributes are not built."""
        self.records_all = not self._follows_parent

    def drops_under(self, parent: Entry | None) -> bool:
        """True when a span under ``parent`` is sure to be sampled out: its parent's trace
        was dropped and the sampler follows the parent."""
        return parent is not None and not parent.recording and self._follows_parent

    def will_record(self, parent: Entry | None) -> bool:
        """False when a span under ``parent`` is sure not to be recorded (its
        trace was sampled out), so building its attributes would be wasted."""
        return self.records_all or parent is None or parent.recording

    def _started(
        self,
        entry: Entry,
        attributes: Mapping[str, AttributeValue],
        parent_context: otel_context.Context | None,
    ) -> None:
        """Called with every span opened and its (clean) start attributes."""

    def attach(self, entry: Entry) -> None:
        """Make ``entry`` the current span until it ends (see module doc)."""
        ctx = entry._context or entry.context
        entry._token = _attach(ctx)
        entry._attached = ctx

    @staticmethod
    def annotate(entry: Entry, key: str, value: AttributeValue) -> None:
        """Write one attribute of adk-otel's own on an open span, kept at its
        end even where a conclusion drops other late attributes under the same
        prefix (``foreign``, see :meth:`conclude`)."""
        if entry.ended:
            return
        entry.span.set_attribute(key, value)
        pending = entry.pending
        if pending is not None and pending.foreign is not None:
            prefix, kept = pending.foreign
            pending.foreign = (prefix, kept | {key})

    def reattach(self, entry: Entry) -> None:
        """Make ``entry`` current again if something else is (ADK restored its
        own context since the entry was attached). The earlier token, if any,
        is then stale and dropped: resetting it would discard later values."""
        if entry.ended or _current() is entry._attached:
            return
        self.attach(entry)

    def end(
        self,
        key: object,
        outcome: Outcome,
        *,
        error: BaseException | None = None,
        reason: str | None = None,
        description: str | None = None,
    ) -> Entry | None:
        """End the span filed under ``key``; a no-op when already ended."""
        entry = self._open.get(key)  # one dict read: atomic, no lock needed
        if entry is None:
            return None
        self.end_entry(entry, outcome, error=error, reason=reason, description=description)
        return entry

    def end_entry(
        self,
        entry: Entry,
        outcome: Outcome,
        *,
        error: BaseException | None = None,
        reason: str | None = None,
        description: str | None = None,
        extra: Mapping[str, AttributeValue] | None = None,
    ) -> None:
        """End ``entry`` after its open descendants; exactly once. An error
        with no exception is described by ``description`` (else ``reason``);
        ``extra`` (clean) attributes are written with the outcome, in one call."""
        if entry.children:
            self._sweep(entry, outcome, reason)
        self._finish(entry, outcome, error, reason, extra, description)

    def _sweep(self, entry: Entry, outcome: Outcome, reason: str | None) -> None:
        """End ``entry``'s open descendants: concluded ones as decided, the
        rest ``incomplete`` (``cancelled`` with a cancelled parent)."""
        swept = Outcome.CANCELLED if outcome is Outcome.CANCELLED else Outcome.INCOMPLETE
        # A cancelled layer's children share its outcome and say why.
        sweep_reason = (reason or "cancelled") if swept is Outcome.CANCELLED else "parent_ended"
        self._end_open(entry, swept, sweep_reason)

    def _end_open(self, entry: Entry, outcome: Outcome, reason: str) -> None:
        """End ``entry``'s open descendants, deepest first: each child's own
        descendants before the child (recursion, not a generator per level:
        this runs at every run's end)."""
        for child in list(entry.children):
            if child.children:
                self._end_open(child, outcome, reason)
            if not child.ended:
                self._finish(child, outcome, None, reason)

    def conclude(
        self,
        entry: Entry,
        outcome: Outcome,
        *,
        error: BaseException | None = None,
        reason: str | None = None,
        description: str | None = None,
        extra: Mapping[str, AttributeValue] | None = None,
        foreign: str | None = None,
    ) -> None:
        """Decide how ``entry`` ends, now, without ending it: its open
        descendants end (their layers are over), the outcome and end time are
        fixed, and the span stays open and current for whatever else runs in
        its layer until :meth:`settle` or any other closer ends it. The first
        conclusion wins; a later one, or one after the end, is a no-op.

        ``extra`` is written at the end, over anything written since. With
        ``foreign`` set, a framework that writes its own telemetry to
        whatever span is current at the end of the layer is undone at the end:
        attributes named ``foreign*`` that appear after now are dropped, and
        the span's start attributes overwritten since are written again."""
        if entry.ended or entry.pending is not None:
            return
        if entry.children:
            self._sweep(entry, outcome, reason)
        guard = None
        if foreign is not None and entry.recording:
            guard = (foreign, frozenset(getattr(entry.span, "_attributes", None) or ()))
        entry.pending = Conclusion(
            outcome,
            error,
            reason,
            description,
            extra,
            time.time_ns(),
            time.perf_counter_ns() if self.durations else 0,
            guard,
        )
        self.concluded += 1  # a hint (see on_event): no lock
        if self.on_conclude:
            self._concluded(entry, outcome, error, reason)

    def _concluded(
        self, entry: Entry, outcome: Outcome, error: BaseException | None, reason: str | None
    ) -> None:
        """Called at each conclusion while :attr:`on_conclude` is set."""

    def settle(self, entry: Entry) -> None:
        """End a concluded entry with its conclusion (a no-op otherwise)."""
        pending = entry.pending
        if pending is not None:
            self._finish(entry, pending.outcome, pending.error, pending.reason)

    def settle_children(self, entry: Entry, keyed: Callable[[object], bool] | None = None) -> None:
        """End ``entry``'s concluded children (only those whose key ``keyed``
        accepts, when given): a new operation under it has begun, so their
        layers are over."""
        for child in list(entry.children):
            if child.pending is not None and (keyed is None or keyed(child.key)):
                self.settle(child)

    def unwind(self) -> None:
        """Detach, in this context, entries that ended while current here but
        were ended from another context (where their token could not be
        reset). Called at the start of a hook, before anything is attached."""
        ctx = _current()
        ref = getattr(ctx, _ENTRY, None)
        entry: Entry | None = ref() if ref is not None else None
        while entry is not None and entry.ended and entry._attached is ctx:
            token = entry._token
            var = getattr(token, "var", None)
            if var is None:
                return
            try:
                var.reset(token)
            except (ValueError, RuntimeError):
                return  # another Context (a task's copy): not ours to change
            entry._token = entry._attached = None
            ctx = _current()
            ref = getattr(ctx, _ENTRY, None)
            entry = ref() if ref is not None else None

    def end_all(self, outcome: Outcome, reason: str) -> int:
        """End every open span (plugin close, shutdown). Returns how many."""
        with self._lock:
            # list() first: one C call, so an unlocked start() elsewhere cannot
            # change the dict under the iteration.
            roots = [e for e in list(self._open.values()) if e.parent is None or e.parent.ended]
        count = len(self._open)
        for entry in roots:
            self.end_entry(entry, outcome, reason=reason)
        with self._lock:
            leftovers = list(self._open.values())
        for entry in leftovers:
            self._finish(entry, outcome, None, reason)
        return count

    def _finish(
        self,
        entry: Entry,
        outcome: Outcome,
        error: BaseException | None,
        reason: str | None,
        extra: Mapping[str, AttributeValue] | None = None,
        description: str | None = None,
    ) -> None:
        """End the span with its outcome (and ``extra`` attributes), all set
        in one call; a no-op when the entry already ended. A concluded entry
        ends as its conclusion decided, whichever closer ends it."""
        with self._lock:
            if entry.ended:
                return
            entry.ended = True
            recording, pending, parent, facts = (
                entry.recording,
                entry.pending,
                entry.parent,
                entry.facts,
            )
            entry.facts = None
            self.ended += recording
            if pending is not None:
                self.concluded -= 1
                outcome, error, reason = pending.outcome, pending.error, pending.reason
                extra, description = pending.extra, pending.description
            if self._open.get(entry.key) is entry:
                del self._open[entry.key]
            if parent is not None:
                parent.children.pop(entry, None)
        span = entry.span
        if facts is not None:
            try:
                extra = self.wrap_up(entry, facts, outcome, error, reason, extra)
            except Exception:
                self._failed("rolling up a span's totals")
        try:
            if pending is not None and pending.foreign is not None:
                self._drop_foreign(entry, *pending.foreign)
            if not recording:
                pass
            elif outcome is Outcome.OK and not reason:
                # _record_outcome's success, written out: most spans end so.
                span.set_attributes({**_OK_ATTRIBUTES, **extra} if extra else _OK_ATTRIBUTES)
                span.set_status(_STATUS_OK)
            else:
                self._record_outcome(span, outcome, error, reason, extra, description)
        except Exception:
            self._failed("recording a span's outcome")
        finally:
            # Whatever failed above, the span ends: a span never ended is a
            # span lost, and with it the parent links of its children.
            # Detached only where it is current: if it is still current in the
            # context that attached it, unwind() detaches it there later.
            token = entry._token
            if token is not None and _current() is entry._attached:
                # A token from a different contextvars.Context (another task's
                # copy) raises: that context is not ours to touch.
                try:
                    token.var.reset(token)
                except (AttributeError, ValueError, RuntimeError):
                    pass
                except Exception:
                    self._failed("detaching a span's context")
                else:
                    entry._token = entry._attached = None
            entry.anchor = None
            try:
                span.end(pending.end_time if pending is not None else None)
            except Exception:
                self._failed("ending a span")
        if facts is not None and self.after_end is not None:
            self.after_end(facts, outcome, error, reason, extra, pending)

    @staticmethod
    def _record_outcome(
        span: Span,
        outcome: Outcome,
        error: BaseException | None,
        reason: str | None,
        extra: Mapping[str, AttributeValue] | None,
        description: str | None = None,
    ) -> None:
        # Every value here is adk-otel's own or cleaned already, but a reason
        # can carry a provider's error code.
        # _value_: the plain attribute (``.value`` is a descriptor call, per span).
        attributes: dict[str, AttributeValue] = {ADK_OUTCOME: outcome._value_}
        if reason:
            attributes[ADK_CLOSE_REASON] = reason = sanitize.clean(reason)
        if outcome is Outcome.ERROR:
            attributes[ERROR_TYPE] = error_type(error) if error is not None else reason or "_OTHER"
        if extra:
            attributes.update(extra)
        if outcome is Outcome.ERROR and ADK_ERROR_CATEGORY not in attributes:
            attributes[ADK_ERROR_CATEGORY] = "other"  # never absent on an ERROR span
        span.set_attributes(attributes)
        if outcome is Outcome.OK:
            span.set_status(_STATUS_OK)
        elif outcome is Outcome.ERROR:
            if error is not None:
                record_exception(span, error)
                span.set_status(Status(StatusCode.ERROR, sanitize.description(error)))
            else:
                text = sanitize.clean(description) if description else reason
                span.set_status(Status(StatusCode.ERROR, text))

    @staticmethod
    def _drop_foreign(entry: Entry, prefix: str, kept: frozenset[str]) -> None:
        """Remove attributes under ``prefix`` written since the conclusion and
        put back the start attributes overwritten. The API has no removal:
        the SDK span's attribute map is edited (a span of another SDK is left
        as it is)."""
        written = getattr(entry.span, "_attributes", None)
        if written is None:
            return
        count = len(written)
        if count <= len(kept) and count != getattr(written, "maxlen", None):
            # Nothing written since the conclusion: keys are only ever added,
            # unless a full attribute map let its oldest go.
            return
        dropped = [key for key in written.keys() - kept if key.startswith(prefix)]
        if not dropped:
            # Nothing under the prefix since the conclusion: the framework
            # wrote nothing (it never writes without its own keys), so no
            # start attribute needs writing again either.
            return
        for key in dropped:
            del written[key]
        opened_with = entry.opened_with
        if opened_with:
            changed = {k: v for k, v in opened_with.items() if written.get(k) != v}
            if changed:
                entry.span.set_attributes(changed)

    def _failed(self, what: str) -> None:
        """A failure inside adk-otel's own bookkeeping: counted, logged once."""
        with self._lock:
            self.failures += 1
            first = self.failures == 1
        if first:
            logger.warning(
                "adk-otel: %s failed; the span was ended all the same. Later failures "
                "are counted (plugin.internal_errors), not logged",
                what,
                exc_info=True,
            )
