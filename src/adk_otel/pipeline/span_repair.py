"""Spans whose text OTLP cannot encode, repaired before export.

adk-otel cleans what it writes (``util/sanitize.py``), but a batch also carries
other libraries' spans. One lone surrogate in a span name, status description
or event name makes the OTLP encoder raise, and the *whole batch* is lost with
it (in an attribute value, the encoder drops that attribute and logs a
traceback). The export path therefore checks each span's text (cheap: almost
every string is ASCII) and hands the exporter a repaired copy of any span
that needs one, every other span untouched.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.trace import Link, Status

from ..util.sanitize import utf8


def _text_ok(value: object) -> bool:
    if value.__class__ is not str:
        return True
    if value.isascii():
        return True
    return utf8(value) is value


def _attributes_ok(attributes: Mapping[str, Any] | None) -> bool:
    if not attributes:
        return True
    for key, value in attributes.items():
        if not _text_ok(key):
            return False
        if isinstance(value, list | tuple):
            if not all(_text_ok(v) for v in value):
                return False
        elif not _text_ok(value):
            return False
    return True


def encodable(span: ReadableSpan) -> bool:
    """Whether every string of ``span`` is valid UTF-8."""
    status = span.status
    return (
        _text_ok(span.name)
        and (status is None or _text_ok(status.description))
        and _attributes_ok(span.attributes)
        and all(_text_ok(e.name) and _attributes_ok(e.attributes) for e in span.events)
        and all(_attributes_ok(link.attributes) for link in span.links)
    )


def _fix(value: Any) -> Any:
    if isinstance(value, str):
        return utf8(value)
    if isinstance(value, list | tuple):
        return [utf8(v) if isinstance(v, str) else v for v in value]
    return value


def _fixed(attributes: Mapping[str, Any] | None) -> dict[str, Any]:
    return {utf8(k): _fix(v) for k, v in (attributes or {}).items()}


def repaired(span: ReadableSpan) -> ReadableSpan:
    """A copy of ``span`` with every string made valid UTF-8 (escapes for
    what UTF-8 cannot carry); everything else as it was."""
    status = span.status
    return ReadableSpan(
        name=utf8(span.name),
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=_fixed(span.attributes),
        events=[Event(utf8(e.name), _fixed(e.attributes), e.timestamp) for e in span.events],
        links=[Link(link.context, _fixed(link.attributes)) for link in span.links],
        kind=span.kind,
        status=Status(status.status_code, _fix(status.description)) if status else status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


def repair_batch(spans: Sequence[ReadableSpan]) -> tuple[Sequence[ReadableSpan], int]:
    """``spans`` with the unencodable ones repaired, and how many were."""
    bad = [i for i, span in enumerate(spans) if not encodable(span)]
    if not bad:
        return spans, 0
    fixed = list(spans)
    for i in bad:
        fixed[i] = repaired(spans[i])
    return fixed, len(bad)
