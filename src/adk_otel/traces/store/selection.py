"""Which runs a store query reads, as SQL: services, attributes, a time window, trace ids.

A selection is written ``KEY=VALUE[,KEY=VALUE...]`` (``--baseline``,
``--candidate``) or given by flags (``--service``, ``--where``, ``--since``,
``--until``, ``--trace-id``). ``since`` and ``until`` bound the run's start
(ISO 8601, UTC unless it says otherwise); ``trace_id`` keeps one trace;
``service.name`` is the resource's; any other key is the invocation span's
attribute, else its resource's (``service.version=1.5``,
``deployment.environment=prod``); the short keys of every ``--where``
(``outcome``, ``app``, ``user``, ``session``, ``category``, ``error``,
``service``, ``version``: ``semconv.RUN_KEY_ALIASES``) stand for their
attributes. Keys and values are trimmed. A key given again allows another
value; different keys must all hold. Every condition is on the run's
invocation span; its other spans are found by trace and ADK invocation id.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from ... import semconv as sc
from ..io.model import SpanRecord

_TRACE_ID = re.compile(r"[0-9a-f]{32}")
SPECIAL = ("since", "until", "trace_id")


class SelectionError(ValueError):
    """A selection that cannot be understood (one-line message)."""


def literal(value: str) -> str:
    """``value`` as a ClickHouse string literal."""
    escaped = value.replace("\\", "\\\\").replace("'", "\\'")
    escaped = escaped.replace("\n", "\\n").replace("\r", "\\r").replace("\0", "\\0")
    return f"'{escaped}'"


def attribute(name: str, span: str = "SpanAttributes", resource: str = "ResourceAttributes") -> str:
    """SQL for a span attribute, else its resource's ('' if neither has it)."""
    key = literal(name)
    return f"if(mapContains({span}, {key}), {span}[{key}], {resource}[{key}])"


def invocation_sql() -> str:
    """SQL: the row is a run's invocation span (:func:`~adk_otel.traces.io.model.is_invocation`)."""
    scope = literal(sc.INSTRUMENTATION_SCOPE)
    return (
        f"(SpanAttributes[{literal(sc.ADK_SPAN_KIND)}] = 'invocation' OR "
        f"((ScopeName = {scope} OR SpanAttributes['otel.scope.name'] = {scope}) AND "
        f"SpanAttributes[{literal(sc.GEN_AI_OPERATION_NAME)}] = "
        f"{literal(sc.OP_INVOKE_WORKFLOW)}))"
    )


def _nanoseconds(text: str, what: str) -> int:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise SelectionError(f"{what} {text!r}: not an ISO 8601 date or time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp()) * 10**9 + moment.microsecond * 1000


@dataclass(frozen=True)
class Selection:
    """Conditions on a run's invocation span; empty: every run."""

    where: dict[str, tuple[str, ...]] = field(default_factory=dict)
    since_ns: int | None = None
    until_ns: int | None = None
    trace_ids: tuple[str, ...] = ()
    text: str = ""
    """How the user wrote it, for reports."""

    @classmethod
    def build(
        cls,
        *,
        where: Iterable[str] = (),
        services: Iterable[str] = (),
        since: str | None = None,
        until: str | None = None,
        trace_ids: Iterable[str] = (),
    ) -> Selection:
        """From ``KEY=VALUE`` terms and the flags' values."""
        conditions: dict[str, list[str]] = {}
        ids = [value.lower() for value in trace_ids]
        words: list[str] = []
        for service in services:
            conditions.setdefault("service.name", []).append(service)
            words.append(f"service.name={service}")
        for term in where:
            key, sep, value = term.partition("=")
            key, value = key.strip(), value.strip()
            if not sep or not key:
                raise SelectionError(f"{term!r}: a condition is KEY=VALUE")
            short = key.replace("-", "_")
            key = sc.RUN_KEY_ALIASES.get(short, short if short in SPECIAL else key)
            words.append(f"{key}={value}")
            if key == "since":
                since = value
            elif key == "until":
                until = value
            elif key == "trace_id":
                ids.append(value.lower())
            else:
                conditions.setdefault(key, []).append(value)
        for value in ids:
            if not _TRACE_ID.fullmatch(value):
                raise SelectionError(f"trace id {value!r}: a trace id is 32 hex digits")
        for name, bound in (("since", since), ("until", until)):
            if bound is not None and f"{name}={bound}" not in words:
                words.append(f"{name}={bound}")
        since_ns = _nanoseconds(since, "since") if since is not None else None
        until_ns = _nanoseconds(until, "until") if until is not None else None
        if since_ns is not None and until_ns is not None and until_ns <= since_ns:
            raise SelectionError(f"until {until} is not after since {since}")
        return cls(
            where={key: tuple(values) for key, values in conditions.items()},
            since_ns=since_ns,
            until_ns=until_ns,
            trace_ids=tuple(dict.fromkeys(ids)),
            text=",".join(words),
        )

    @classmethod
    def parse(cls, text: str) -> Selection:
        """``KEY=VALUE[,KEY=VALUE...]``."""
        terms = [term for term in text.split(",") if term.strip()]
        if not terms:
            raise SelectionError(f"{text!r}: a selection is KEY=VALUE[,KEY=VALUE...]")
        return cls.build(where=terms)

    def merged(self, other: Selection) -> Selection:
        """Both selections' conditions (the command's flags and a side's)."""
        where = dict(self.where)
        for key, values in other.where.items():
            where[key] = values  # the side's own value for a key replaces the common one
        return Selection(
            where=where,
            since_ns=other.since_ns if other.since_ns is not None else self.since_ns,
            until_ns=other.until_ns if other.until_ns is not None else self.until_ns,
            trace_ids=other.trace_ids or self.trace_ids,
            text=",".join(part for part in (self.text, other.text) if part),
        )

    @property
    def empty(self) -> bool:
        return (
            not (self.where or self.trace_ids) and self.since_ns is None and (self.until_ns is None)
        )

    def matches(self, invocation: SpanRecord) -> bool:
        """The same conditions on a run's invocation span read from trace files."""
        if self.trace_ids and invocation.trace_id not in self.trace_ids:
            return False
        if self.since_ns is not None and invocation.start_ns < self.since_ns:
            return False
        if self.until_ns is not None and invocation.start_ns >= self.until_ns:
            return False
        return all(_held(invocation, key) in values for key, values in self.where.items())

    def sql(self) -> str:
        """The condition on an invocation span's row ('1' for every run)."""
        parts: list[str] = []
        for key, values in self.where.items():
            column = "ServiceName" if key == "service.name" else attribute(key)
            parts.append(f"{column} IN ({_list(values)})")
        if self.trace_ids:
            parts.append(f"TraceId IN ({_list(self.trace_ids)})")
        if self.since_ns is not None:
            parts.append(f"Timestamp >= fromUnixTimestamp64Nano(toInt64({self.since_ns}))")
        if self.until_ns is not None:
            parts.append(f"Timestamp < fromUnixTimestamp64Nano(toInt64({self.until_ns}))")
        return " AND ".join(parts) or "1"

    def span_sql(self) -> str:
        """A condition every span of a selected run meets too: its service and
        its trace (what the table's order and indexes can use)."""
        parts: list[str] = []
        services = self.where.get("service.name")
        if services:
            parts.append(f"ServiceName IN ({_list(services)})")
        if self.trace_ids:
            parts.append(f"TraceId IN ({_list(self.trace_ids)})")
        return " AND ".join(parts) or "1"


def _held(invocation: SpanRecord, key: str) -> str | None:
    found = invocation.attributes.get(key, invocation.resource.get(key))
    return None if found is None else str(found)


def why_none_matched(invocations: Iterable[SpanRecord], selection: Selection) -> str:
    """Why no run of trace files met ``selection``: per ``--where`` key, the keys
    the runs have (with a did-you-mean) or the values they hold."""

    runs = list(invocations)
    if not runs:
        return "no adk-otel invocation span"
    present = {key for run in runs for key in (*run.attributes, *run.resource)}
    reasons = []
    for key in selection.where:
        if key not in present:
            reasons.append(missing_key(key, present))
            continue
        counts = Counter(_held(run, key) for run in runs)
        counts.pop(None, None)
        shown = ", ".join(f"{v!r} ({n} runs)" for v, n in counts.most_common(8))
        reasons.append(f"{key} holds {shown}{', ...' if len(counts) > 8 else ''}")
    return "; ".join(reasons) or f"{len(runs)} runs, none in that time or trace"


def _list(values: Sequence[str]) -> str:
    return ", ".join(literal(value) for value in values)


def missing_key(key: str, present: set[str]) -> str:
    """Why ``key`` selects nothing when no run holds it, with the keys (or
    their short aliases) it may have meant."""
    import difflib  # only when a selection found nothing

    short = {alias for alias, name in sc.RUN_KEY_ALIASES.items() if name in present}
    near = difflib.get_close_matches(key, sorted(present | short), 3)
    guess = f"; did you mean {' or '.join(near)}?" if near else ""
    return f"no run has {key!r}{guess}"
