"""One span record, whatever it came from, and the forest of span trees.

Spans reach the assertion helpers from three places: the SDK in the same
process (``ReadableSpan``), an OTLP receiver (protobuf ``Span``) and OTLP JSON
files. :class:`SpanRecord` is the one shape they are all turned into, so
querying, rendering and checking are written once. It holds plain values
only (hex ids, names of enums, dicts, tuples) and imports no SDK or protobuf
type, so records compare, print and pickle like data.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ... import semconv as sc

AttributeMap = Mapping[str, Any]

_PROTO_KINDS = ("UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER")
_PROTO_STATUS = ("UNSET", "OK", "ERROR")
_PROTO_SPAN = "opentelemetry.proto.trace.v1.Span"
_PROTO_REQUESTS = (
    "opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest",
    "opentelemetry.proto.trace.v1.TracesData",
)


def _plain(value: Any) -> Any:
    """Attribute values as immutable plain data (lists become tuples)."""
    if isinstance(value, list | tuple):
        return tuple(_plain(item) for item in value)
    return value


@dataclass(frozen=True)
class SpanEvent:
    """A span event (``exception`` events carry the error type and message)."""

    name: str
    time_ns: int
    attributes: AttributeMap = field(default_factory=dict)


@dataclass(frozen=True)
class SpanRecord:
    """A finished (or still open) span as plain data.

    ``kind`` is the OpenTelemetry span kind name (``INTERNAL``, ``CLIENT``...),
    ``status_code`` one of ``UNSET``/``OK``/``ERROR``; ``end_ns`` is None while
    the span has not ended. The ADK layer is :attr:`adk_kind`.
    """

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    kind: str = "INTERNAL"
    status_code: str = "UNSET"
    status_description: str | None = None
    start_ns: int = 0
    end_ns: int | None = None
    attributes: AttributeMap = field(default_factory=dict)
    events: tuple[SpanEvent, ...] = ()
    resource: AttributeMap = field(default_factory=dict)
    scope: str | None = None
    scope_version: str | None = None

    def __hash__(self) -> int:
        return hash(self.key)

    @property
    def key(self) -> tuple[str, str]:
        """``(trace_id, span_id)``: unique within any sane set of spans."""
        return (self.trace_id, self.span_id)

    @property
    def ended(self) -> bool:
        return self.end_ns is not None

    @property
    def duration_ms(self) -> float | None:
        if self.end_ns is None:
            return None
        return max(self.end_ns - self.start_ns, 0) / 1e6

    @property
    def adk_kind(self) -> str | None:
        """``invocation``, ``agent``, ``model`` or ``tool`` (``adk.span.kind``)."""
        return self.attributes.get(sc.ADK_SPAN_KIND)

    @property
    def service(self) -> str | None:
        """The resource's ``service.name``: which service emitted the span."""
        value = self.resource.get("service.name")
        return value if isinstance(value, str) else None

    @property
    def outcome(self) -> str | None:
        return self.attributes.get(sc.ADK_OUTCOME)

    @property
    def error_type(self) -> str | None:
        """``error.type``, else the type of the first recorded exception."""
        value = self.attributes.get(sc.ERROR_TYPE)
        if value is None:
            for event in self.events:
                if event.name == "exception":
                    value = event.attributes.get("exception.type")
                    break
        return value

    # -- constructors ----------------------------------------------------------

    @classmethod
    def from_readable(cls, span: Any) -> SpanRecord:
        """From an SDK ``ReadableSpan`` (or a live SDK ``Span``, then maybe unended)."""
        context = span.get_span_context()
        parent = span.parent
        status = span.status
        scope = span.instrumentation_scope
        resource = span.resource
        return cls(
            trace_id=format(context.trace_id, "032x"),
            span_id=format(context.span_id, "016x"),
            parent_id=format(parent.span_id, "016x") if parent is not None else None,
            name=span.name,
            kind=span.kind.name,
            status_code=status.status_code.name,
            status_description=status.description or None,
            start_ns=span.start_time or 0,
            end_ns=span.end_time,
            attributes={k: _plain(v) for k, v in (span.attributes or {}).items()},
            events=tuple(
                SpanEvent(
                    name=event.name,
                    time_ns=event.timestamp or 0,
                    attributes={k: _plain(v) for k, v in (event.attributes or {}).items()},
                )
                for event in span.events
            ),
            resource=dict(resource.attributes) if resource is not None else {},
            scope=scope.name if scope is not None else None,
            scope_version=(scope.version or None) if scope is not None else None,
        )

    @classmethod
    def from_proto(cls, span: Any, *, resource: Any = None, scope: Any = None) -> SpanRecord:
        """From an OTLP protobuf ``Span`` plus, when known, its ``Resource`` and
        ``InstrumentationScope`` messages. An end time of 0 reads as unended."""
        status = span.status
        return cls(
            trace_id=span.trace_id.hex(),
            span_id=span.span_id.hex(),
            parent_id=span.parent_span_id.hex() or None,
            name=span.name,
            kind=_enum_name(_PROTO_KINDS, span.kind),
            status_code=_enum_name(_PROTO_STATUS, status.code),
            status_description=status.message or None,
            start_ns=span.start_time_unix_nano,
            end_ns=span.end_time_unix_nano or None,
            attributes=proto_attributes(span.attributes),
            events=tuple(
                SpanEvent(event.name, event.time_unix_nano, proto_attributes(event.attributes))
                for event in span.events
            ),
            resource=proto_attributes(resource.attributes) if resource is not None else {},
            scope=(scope.name or None) if scope is not None else None,
            scope_version=(scope.version or None) if scope is not None else None,
        )

    @classmethod
    def from_request(cls, request: Any) -> list[SpanRecord]:
        """Every span of an ``ExportTraceServiceRequest`` / ``TracesData``."""
        return [
            cls.from_proto(span, resource=rs.resource, scope=ss.scope)
            for rs in request.resource_spans
            for ss in rs.scope_spans
            for span in ss.spans
        ]


def is_invocation(record: SpanRecord) -> bool:
    """adk-otel's invocation span (one run): ADK's own ``invoke_workflow`` spans
    (kept with ``keep_adk_spans``) share the operation name but are not runs of
    their own."""
    if record.adk_kind == "invocation":
        return True
    return (
        record.scope == sc.INSTRUMENTATION_SCOPE
        and record.attributes.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_INVOKE_WORKFLOW
    )


def _enum_name(names: tuple[str, ...], value: int) -> str:
    return names[value] if 0 <= value < len(names) else str(value)


def _any_value(value: Any) -> Any:
    which = value.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return tuple(_any_value(item) for item in value.array_value.values)
    if which == "kvlist_value":
        return proto_attributes(value.kvlist_value.values)
    return getattr(value, which)


def proto_attributes(key_values: Iterable[Any]) -> dict[str, Any]:
    """OTLP ``KeyValue`` list -> plain dict."""
    return {kv.key: _any_value(kv.value) for kv in key_values}


def as_records(spans: Iterable[Any]) -> list[SpanRecord]:
    """Whatever spans you have -> records.

    Accepts :class:`SpanRecord`, SDK ``ReadableSpan``, OTLP protobuf ``Span``
    and whole ``ExportTraceServiceRequest`` / ``TracesData`` messages (which
    keep their resource and scope), mixed freely.
    """
    records: list[SpanRecord] = []
    for item in spans:
        if isinstance(item, SpanRecord):
            records.append(item)
            continue
        descriptor = getattr(item, "DESCRIPTOR", None)
        full_name = getattr(descriptor, "full_name", None)
        if full_name == _PROTO_SPAN:
            records.append(SpanRecord.from_proto(item))
        elif full_name in _PROTO_REQUESTS:
            records.extend(SpanRecord.from_request(item))
        elif hasattr(item, "get_span_context") and hasattr(item, "instrumentation_scope"):
            records.append(SpanRecord.from_readable(item))
        else:
            raise TypeError(
                f"not a span: {type(item).__qualname__} (expected SpanRecord, an SDK "
                "ReadableSpan, an OTLP protobuf Span or ExportTraceServiceRequest)"
            )
    return records


def sort_key(record: SpanRecord) -> tuple[int, str, str]:
    """Stable sibling order: start time, then name (then id, to break ties)."""
    return (record.start_ns, record.name, record.span_id)


@dataclass(eq=False)
class SpanNode:
    """A span in the forest. ``orphan``: it names a parent that is not there."""

    record: SpanRecord
    parent: SpanNode | None = None
    children: list[SpanNode] = field(default_factory=list)
    orphan: bool = False

    def walk(self, depth: int = 0) -> Iterator[tuple[SpanNode, int]]:
        """This node and its descendants, depth first, with their depth.
        Iterative: a trace may nest deeper than Python's recursion limit."""
        stack: list[tuple[SpanNode, int]] = [(self, depth)]
        while stack:
            node, level = stack.pop()
            yield node, level
            stack.extend((child, level + 1) for child in reversed(node.children))

    def path(self) -> list[SpanNode]:
        """Root-to-this chain of nodes."""
        chain: list[SpanNode] = []
        node: SpanNode | None = self
        while node is not None:
            chain.append(node)
            node = node.parent
        return chain[::-1]


class Forest:
    """Span trees built from parent ids.

    A span whose parent is missing (not exported, from another process) is
    kept as a root flagged ``orphan``, never dropped; so is anything caught in
    a parent-id cycle. A span seen again (same trace and span id) is dropped
    and counted in ``duplicates``. Roots and siblings are in :func:`sort_key`
    order.
    """

    def __init__(self, spans: Iterable[Any]) -> None:
        records = as_records(spans)
        unique = {record.key: record for record in reversed(records)}
        # A span is its (trace id, span id): one exported twice (an export
        # retried, a file appended twice) is one span, its first copy kept.
        self.records: list[SpanRecord] = [r for r in records if unique.get(r.key) is r]
        self.duplicates: int = len(records) - len(self.records)
        """Spans dropped as seen before (same trace and span id)."""
        nodes = [SpanNode(record) for record in self.records]
        self._nodes: dict[tuple[str, str], SpanNode] = {node.record.key: node for node in nodes}
        roots: list[SpanNode] = []
        for node in nodes:
            record = node.record
            parent = (
                self._nodes.get((record.trace_id, record.parent_id)) if record.parent_id else None
            )
            if parent is None or parent is node:
                node.orphan = record.parent_id is not None
                roots.append(node)
            else:
                node.parent = parent
                parent.children.append(node)
        reached = {id(n) for root in roots for n, _ in root.walk()}
        for node in nodes:
            if id(node) not in reached:  # a parent-id cycle: cut it here
                if node.parent is not None:
                    node.parent.children.remove(node)
                node.parent, node.orphan = None, True
                roots.append(node)
                reached.update(id(n) for n, _ in node.walk())
        for node in nodes:
            node.children.sort(key=lambda child: sort_key(child.record))
        self.roots: list[SpanNode] = sorted(roots, key=lambda root: sort_key(root.record))
        self._all = nodes

    def __len__(self) -> int:
        return len(self._all)

    def node(self, record: SpanRecord) -> SpanNode | None:
        """The node of ``record`` (for a duplicated id: the one kept)."""
        return self._nodes.get(record.key)

    def walk(self) -> Iterator[tuple[SpanNode, int]]:
        """Every node, depth first from each root, with its depth."""
        for root in self.roots:
            yield from root.walk()

    def trace_ids(self) -> list[str]:
        """Trace ids in order of their first root."""
        return list(dict.fromkeys(root.record.trace_id for root in self.roots))

    def ancestors(self, record: SpanRecord) -> list[SpanRecord]:
        """Parent first, up to the root."""
        node = self._nodes.get(record.key)
        chain: list[SpanRecord] = []
        while node is not None and node.parent is not None:
            node = node.parent
            chain.append(node.record)
        return chain
