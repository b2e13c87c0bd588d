"""The CLI's ``--format json`` output: span forests and check results as plain JSON.

Spans are listed flat per trace, depth first in the order the text tree
prints them, each with its ``depth`` and ids: a consumer rebuilds the tree
from ``parent_span_id`` without recursion (a trace may nest deeper than a
JSON parser's limit). The shape is documented in docs/testing.md and
checked against docs/cli-output.schema.json by the tests.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from .io.model import Forest, SpanNode

SCHEMA_VERSION = 1


def forest_json(forest: Forest) -> dict[str, Any]:
    """``{"version", "span_count", "trace_count", "traces": [{"trace_id", "spans"}]}``."""
    traces: dict[str, list[dict[str, Any]]] = {}
    for node, depth in forest.walk():
        traces.setdefault(node.record.trace_id, []).append(span_json(node, depth))
    return {
        "version": SCHEMA_VERSION,
        "span_count": len(forest),
        "duplicate_spans": forest.duplicates,
        "trace_count": len(traces),
        "traces": [{"trace_id": trace_id, "spans": spans} for trace_id, spans in traces.items()],
    }


def check_json(forest: Forest, checked: int, failures: list[str]) -> dict[str, Any]:
    """The check result plus the actual forest (as :func:`forest_json`)."""
    document = forest_json(forest)
    return {
        "version": document.pop("version"),
        "ok": not failures,
        "expectations": checked,
        "failures": list(failures),
        **document,
    }


def span_json(node: SpanNode, depth: int) -> dict[str, Any]:
    record = node.record
    return {
        "depth": depth,
        "name": record.name,
        "trace_id": record.trace_id,
        "span_id": record.span_id,
        "parent_span_id": record.parent_id,
        "orphan": node.orphan,
        "span_kind": record.kind,
        "adk_kind": _plain(record.adk_kind),
        "status": record.status_code,
        "status_message": record.status_description,
        "outcome": _plain(record.outcome),
        "error_type": _plain(record.error_type),
        "start_time_unix_nano": record.start_ns,
        "end_time_unix_nano": record.end_ns,
        "duration_ms": record.duration_ms,
        "service": record.service,
        "scope": record.scope,
        "attributes": _plain(record.attributes),
    }


def _plain(value: Any) -> Any:
    """Attribute values as JSON: tuples as lists, bytes as hex, NaN and the
    infinities as strings (JSON has no spelling for them)."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, tuple | list):
        return [_plain(item) for item in value]
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    return value
