"""Span records back to OTLP JSON, for spans that are no longer SDK spans.

The SDK's encoder (what the OTLP exporters send) needs live ``ReadableSpan``
objects; a test's captured :class:`~.model.SpanRecord` list, or records read
from one file and written to another, are plain data. This writes them in the
same OTLP JSON layout, so ``adk-otel tree`` / ``check`` read them back equal.
Spans are grouped by resource and scope in the order first seen; a span still
open is written without an end time (and reads back as never ended).
"""

from __future__ import annotations

import base64
import math
from collections.abc import Iterable, Mapping
from typing import Any

from .model import SpanEvent, SpanRecord

_KINDS = ("UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER")
_STATUS = ("UNSET", "OK", "ERROR")


def records_to_dict(records: Iterable[SpanRecord]) -> dict[str, Any]:
    """One ``{"resourceSpans": [...]}`` document holding every record."""
    groups: dict[str, dict[tuple[str | None, str | None], list[dict[str, Any]]]] = {}
    resources: dict[str, Mapping[str, Any]] = {}
    for record in records:
        key = repr(sorted(record.resource.items()))
        resources.setdefault(key, record.resource)
        scopes = groups.setdefault(key, {})
        scopes.setdefault((record.scope, record.scope_version), []).append(_span(record))
    resource_spans = []
    for key, scopes in groups.items():
        scope_spans = []
        for (name, version), spans in scopes.items():
            scope: dict[str, Any] = {}
            if name:
                scope["name"] = name
            if version:
                scope["version"] = version
            scope_spans.append({"scope": scope, "spans": spans})
        resource = {"attributes": _attributes(resources[key])}
        resource_spans.append({"resource": resource, "scopeSpans": scope_spans})
    return {"resourceSpans": resource_spans}


def _span(record: SpanRecord) -> dict[str, Any]:
    span: dict[str, Any] = {"traceId": record.trace_id, "spanId": record.span_id}
    if record.parent_id:
        span["parentSpanId"] = record.parent_id
    span["name"] = record.name
    span["kind"] = _index(_KINDS, record.kind)
    span["startTimeUnixNano"] = str(record.start_ns)
    if record.end_ns is not None:
        span["endTimeUnixNano"] = str(record.end_ns)
    span["attributes"] = _attributes(record.attributes)
    if record.events:
        span["events"] = [_event(event) for event in record.events]
    status: dict[str, Any] = {"code": _index(_STATUS, record.status_code)}
    if record.status_description:
        status["message"] = record.status_description
    span["status"] = status
    return span


def _event(event: SpanEvent) -> dict[str, Any]:
    return {
        "timeUnixNano": str(event.time_ns),
        "name": event.name,
        "attributes": _attributes(event.attributes),
    }


def _index(names: tuple[str, ...], name: str) -> int:
    if name in names:
        return names.index(name)
    return int(name) if name.isdigit() else 0


def _attributes(attributes: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"key": key, "value": _any_value(value)} for key, value in attributes.items()]


def _any_value(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        if math.isnan(value):
            return {"doubleValue": "NaN"}
        if math.isinf(value):
            return {"doubleValue": "Infinity" if value > 0 else "-Infinity"}
        return {"doubleValue": value}
    if isinstance(value, bytes):
        return {"bytesValue": base64.b64encode(value).decode("ascii")}
    if isinstance(value, Mapping):
        return {"kvlistValue": {"values": _attributes(value)}}
    if isinstance(value, list | tuple):
        return {"arrayValue": {"values": [_any_value(item) for item in value]}}
    return {"stringValue": str(value)}
