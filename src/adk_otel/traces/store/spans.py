"""Spans in and out of the exporter's table: the traces of selected runs read
back as :class:`~adk_otel.traces.io.model.SpanRecord` (for ``tree``, ``check``
and ``evalset``, bounded), and records written as the exporter writes them
(``adk-otel load``).

The table stores every attribute as a string; numbers adk-otel's readers
need as numbers (token counts, eval scores and indexes) are read back as
numbers, everything else stays the string the exporter wrote.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

from ... import semconv as sc
from ..io.model import SpanEvent, SpanRecord
from . import schema
from .engine import Store, StoreError
from .selection import Selection, invocation_sql, literal

MAX_SPANS = 1_000_000
"""Spans one command may read back from a store (``--max-spans``)."""

_INTEGERS = frozenset(
    {
        sc.GEN_AI_USAGE_INPUT_TOKENS,
        sc.GEN_AI_USAGE_OUTPUT_TOKENS,
        sc.ADK_USAGE_INPUT_TOKENS,
        sc.ADK_USAGE_OUTPUT_TOKENS,
        sc.ADK_EVAL_INVOCATION_INDEX,
    }
)
_FLOATS = frozenset({sc.GEN_AI_EVALUATION_SCORE_VALUE})


def checked_table(store: Store) -> str:
    """The table's qualified name, once its columns are the exporter's."""
    location = store.location
    rows = store.rows(
        "SELECT name, type FROM system.columns WHERE database = "
        f"{literal(location.database)} AND table = {literal(location.table)}"
    )
    if not rows:
        raise StoreError(
            f"{location}: no table {location.qualified} (the Collector's ClickHouse "
            "exporter creates it; adk-otel load makes one)"
        )
    types = {name: kind for name, kind in rows}
    for name, kind in schema.COLUMNS.items():
        found = types.get(name)
        if found != kind:
            what = f"has {name} as {found}" if found else f"has no column {name}"
            raise StoreError(
                f"{location}: {location.qualified} is not the exporter's traces table "
                f"({what}, expected {kind})"
            )
    return location.qualified


def _typed(key: str, value: str) -> Any:
    if value.startswith("[") and value.endswith("]"):
        # An array attribute, as the exporter writes it (JSON of scalars); JSON
        # text of objects (captured messages) was a string and stays one.
        try:
            items = json.loads(value)
        except ValueError:
            return value
        scalars = isinstance(items, list) and all(
            isinstance(item, str | int | float | bool) for item in items
        )
        return tuple(items) if scalars else value
    if key in _INTEGERS:
        try:
            return int(value)
        except ValueError:
            return value
    if key in _FLOATS:
        try:
            number = float(value)
        except ValueError:
            return value
        return number if math.isfinite(number) else value
    return value


def _attributes(mapping: Mapping[str, str]) -> dict[str, Any]:
    return {key: _typed(key, value) for key, value in mapping.items()}


_COLUMNS = (
    "TraceId, SpanId, ParentSpanId, SpanName, SpanKind, StatusCode, StatusMessage, "
    "toString(toUnixTimestamp64Nano(Timestamp)), toString(Duration), SpanAttributes, "
    "ResourceAttributes, ScopeName, ScopeVersion, "
    "arrayMap(t -> toString(toUnixTimestamp64Nano(t)), `Events.Timestamp`), "
    "`Events.Name`, `Events.Attributes`"
)


def _record(row: list[Any]) -> SpanRecord:
    (trace, span, parent, name, kind, status, message, start, duration) = row[:9]
    attributes, resource, scope, version, times, names, event_attributes = row[9:]
    start_ns = int(start)
    return SpanRecord(
        trace_id=trace,
        span_id=span,
        parent_id=parent or None,
        name=name,
        kind=schema.from_column(kind, "SPAN_KIND_") or "INTERNAL",
        status_code=schema.from_column(status, "STATUS_CODE_") or "UNSET",
        status_description=message or None,
        start_ns=start_ns,
        end_ns=start_ns + int(duration),
        attributes=_attributes(attributes),
        events=tuple(
            SpanEvent(name=event, time_ns=int(at), attributes=_attributes(values))
            for at, event, values in zip(times, names, event_attributes, strict=False)
        ),
        resource=dict(resource),
        scope=scope or None,
        scope_version=version or None,
    )


def read_spans(
    store: Store,
    table: str,
    condition: str = "1",
    *,
    selection: Selection | None = None,
    what: str = "spans",
    limit: int = MAX_SPANS,
) -> list[SpanRecord]:
    """The spans meeting ``condition`` in the traces of the selected runs
    (whole traces: every span of a trace with a selected run), at most
    ``limit`` of them, else :class:`StoreError`."""
    selection = selection or Selection()
    where = f"({condition}) AND {selection.span_sql()}"
    if not selection.empty:
        where += (
            f" AND TraceId IN (SELECT TraceId FROM {table} WHERE {invocation_sql()} AND "
            f"{selection.span_sql()} AND {selection.sql()})"
        )
    rows = store.rows(
        f"SELECT {_COLUMNS} FROM {table} WHERE {where} "
        f"ORDER BY TraceId, Timestamp LIMIT {limit + 1}"
    )
    if len(rows) > limit:
        raise StoreError(
            f"{store.location}: more than {limit} {what} selected; select fewer "
            "(--trace-id, --service, --since/--until, --where) or raise --max-spans"
        )
    return [_record(row) for row in rows]


# -- writing -----------------------------------------------------------------


def _strings(mapping: Mapping[str, Any]) -> dict[str, str]:
    """Attribute values as the exporter writes them (``AsString``)."""
    return {str(key): _as_string(value) for key, value in mapping.items()}


def _as_string(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, tuple | list):
        return json.dumps([_plain(item) for item in value], separators=(",", ":"))
    if isinstance(value, Mapping):
        return json.dumps({k: _plain(v) for k, v in value.items()}, separators=(",", ":"))
    return str(value)


def _plain(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [_plain(item) for item in value]
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def _time(ns: int) -> str:
    """A DateTime64(9) value in JSON input: seconds with nine decimals."""
    return f"{ns // 10**9}.{ns % 10**9:09d}"


def row_json(record: SpanRecord) -> str:
    """One ``JSONEachRow`` line of the exporter's table for ``record``."""
    end = record.end_ns if record.end_ns is not None else record.start_ns
    row = {
        "Timestamp": _time(record.start_ns),
        "TraceId": record.trace_id,
        "SpanId": record.span_id,
        "ParentSpanId": record.parent_id or "",
        "TraceState": "",
        "SpanName": record.name,
        "SpanKind": schema.span_kind_column(record.kind),
        "ServiceName": str(record.resource.get("service.name", "")),
        "ResourceAttributes": _strings(record.resource),
        "ScopeName": record.scope or "",
        "ScopeVersion": record.scope_version or "",
        "SpanAttributes": _strings(record.attributes),
        "Duration": max(end - record.start_ns, 0),
        "StatusCode": schema.status_column(record.status_code),
        "StatusMessage": record.status_description or "",
        "Events.Timestamp": [_time(event.time_ns) for event in record.events],
        "Events.Name": [event.name for event in record.events],
        "Events.Attributes": [_strings(event.attributes) for event in record.events],
    }
    return json.dumps(row, ensure_ascii=False, separators=(",", ":"))


def create_table(store: Store) -> str:
    """The exporter's table, made if missing; its qualified name."""
    location = store.location
    store.command(f"CREATE DATABASE IF NOT EXISTS {location.database}")
    store.command(schema.CREATE_TABLE.format(table=location.qualified))
    return checked_table(store)


def load(store: Store, records: Iterable[SpanRecord], *, batch: int = 50_000) -> int:
    """Write ``records`` into the store's table (made if missing); how many."""
    table = create_table(store)
    lines: list[str] = []
    written = 0
    for record in records:
        lines.append(row_json(record))
        if len(lines) >= batch:
            store.insert_json(table, lines)
            written += len(lines)
            lines = []
    store.insert_json(table, lines)
    return written + len(lines)


class IdTally:
    """Spans counted by their ids as they stream past: how many, and how many
    reuse the ids of a different span (another start time or name: runs whose
    ids repeat, not the same span exported twice). A few bytes a span."""

    def __init__(self) -> None:
        self.spans: int = 0
        self.repeated: int = 0
        self._seen: dict[int, int] = {}

    def add(self, record: SpanRecord) -> None:
        self.spans += 1
        key = hash((record.trace_id, record.span_id))
        identity = hash((record.start_ns, record.name))
        before = self._seen.setdefault(key, identity)
        if before != identity:
            self.repeated += 1


def duplicate_count(store: Store) -> int:
    """Spans in the store's table beyond the first with their trace and span id."""
    table = checked_table(store)
    rows = store.rows(f"SELECT count() - uniqExact(TraceId, SpanId) FROM {table}")
    return int(rows[0][0]) if rows else 0
