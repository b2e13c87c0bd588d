"""OTLP JSON traces, exactly as the OpenTelemetry Collector's ``file`` exporter writes them.

One ``{"resourceSpans": [...]}`` object per line, lowerCamelCase keys, trace
and span ids as hex strings (OTLP JSON's one departure from protobuf's JSON
mapping, which would use base64), enums as integers and 64-bit integers as
strings. Files written here are read by the collector's ``otlpjsonfile``
receiver and vice versa, so a trace can go from a CI run to ``adk-otel check``
with or without a collector in between.

Reading also accepts a single pretty-printed document, enum names, base64
ids, and skips lines holding only metrics or logs (a collector may write all
signals to one file). Anything else is an :class:`OtlpJsonError` with a
one-line message saying where and why.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import os
import re
import sys
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from .limits import over
from .model import SpanEvent, SpanRecord, as_records
from .record_json import records_to_dict

_ID_FIELDS = ("traceId", "spanId", "parentSpanId")
_OTHER_SIGNALS = ("resourceMetrics", "resourceLogs", "resourceProfiles")


class OtlpJsonError(ValueError):
    """Input that is not OTLP JSON traces; the message is one line."""


# -- writing -------------------------------------------------------------------


def request_to_dict(request: Any) -> dict[str, Any]:
    """An ``ExportTraceServiceRequest`` / ``TracesData`` as an OTLP JSON object."""
    document = json_format.MessageToDict(request, use_integers_for_enums=True)
    _convert_ids(document)
    return document


def request_to_line(request: Any) -> str:
    """One file-exporter line (compact JSON, no trailing newline)."""
    return json.dumps(request_to_dict(request), separators=(",", ":"), ensure_ascii=False)


def spans_to_line(spans: Sequence[Any]) -> str:
    """Spans as one line: SDK ``ReadableSpan``s encoded the way the OTLP
    exporters send them; anything else :func:`~.model.as_records` accepts
    (``SpanRecord``s, e.g. ``adk_trace.spans``; protobuf spans or requests)
    through its records."""
    if all(_is_sdk_span(span) for span in spans):
        return request_to_line(encode_spans(spans))
    document = records_to_dict(as_records(spans))
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False)


def _is_sdk_span(span: Any) -> bool:
    return hasattr(span, "get_span_context") and hasattr(span, "instrumentation_scope")


def write_spans(destination: str | Path | IO[str], spans: Sequence[Any]) -> None:
    """Append the spans (SDK spans or ``SpanRecord``s, see :func:`spans_to_line`)
    as one line to a path or an open text file."""
    _append(destination, [spans_to_line(spans)])


def write_requests(destination: str | Path | IO[str], requests: Iterable[Any]) -> None:
    """Append one line per protobuf request (e.g. ``OtlpReceiver.requests``)."""
    _append(destination, [request_to_line(request) for request in requests])


def _append(destination: str | Path | IO[str], lines: list[str]) -> None:
    text = "".join(line + "\n" for line in lines)
    if isinstance(destination, str | Path):
        with open(destination, "a", encoding="utf-8") as handle:
            handle.write(text)
    else:
        destination.write(text)


TRACES_FILE_ENV = "ADK_OTEL_TRACES_FILE"
DEFAULT_TRACES_FILE = "adk-otel-traces.jsonl"


class OtlpJsonFileExporter(SpanExporter):
    """A ``SpanExporter`` appending each export batch as one line to a file.

    Traces kept without a collector: ``OTEL_TRACES_EXPORTER=otlp_json_file``
    (its entry point) or ``instrument(..., traces_file=PATH)``, then
    ``adk-otel tree`` / ``check`` / ``summarize`` on the file. ``path``
    defaults to ``ADK_OTEL_TRACES_FILE``, else ``adk-otel-traces.jsonl`` in the
    working directory. Thread-safe; lines are never interleaved.
    """

    def __init__(self, path: str | Path | None = None) -> None:
        if path is None:
            path = os.environ.get(TRACES_FILE_ENV, "").strip() or DEFAULT_TRACES_FILE
        self.path: Path = Path(path)
        self._lock = threading.Lock()
        self._closed = False

    def export(self, spans: Sequence[Any]) -> SpanExportResult:
        if self._closed:
            return SpanExportResult.FAILURE
        if spans:
            line = spans_to_line(spans)
            with self._lock:
                _append(self.path, [line])
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self._closed = True

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


# -- reading -------------------------------------------------------------------


def loads_spans(text: str, *, source: str = "<input>") -> list[SpanRecord]:
    """Every span in OTLP JSON text (JSON Lines or one document)."""
    lines = text.removeprefix("\ufeff").splitlines(keepends=True)
    records: list[SpanRecord] = []
    traces_found = False
    for where, document in iter_text_documents(lines, source):
        found = document_records(document, where)
        if found is not None:
            traces_found = True
            records += found
    if not traces_found:
        raise OtlpJsonError(f"{source}: holds metrics or logs only, no traces")
    return records


def document_records(document: Any, where: str) -> list[SpanRecord] | None:
    """The spans of one parsed OTLP JSON document; ``None`` for a document
    holding only metrics, logs or profiles (a collector may write all
    signals to one file)."""
    if not isinstance(document, dict):
        raise OtlpJsonError(
            f"{where}: not OTLP JSON (expected an object, got {type(document).__name__})"
        )
    if "resourceSpans" not in document:
        if any(key in document for key in _OTHER_SIGNALS):
            return None
        known = known_file(document)
        if known is not None:
            raise OtlpJsonError(f"{where}: {known}")
        keys = ", ".join(sorted(document)[:5]) or "none"
        raise OtlpJsonError(f'{where}: not OTLP JSON traces (no "resourceSpans"; keys: {keys})')
    try:
        return _traces(document)
    except _Invalid as exc:
        raise OtlpJsonError(f"{where}: not valid OTLP JSON ({exc})") from None


_SIGNAL_ITEMS = {
    "resourceLogs": ("scopeLogs", "logRecords"),
    "resourceMetrics": ("scopeMetrics", "metrics"),
}


FILE_EXPORTER_HINT = (
    "keep traces for the adk-otel commands with OTEL_TRACES_EXPORTER=otlp_json_file "
    "(or instrument(..., traces_file=PATH))"
)


def known_file(document: Any) -> str | None:
    """What a JSON document that holds no traces is, when it is one a user is
    likely to hand in by mistake (adk-otel's own outputs, the SDK's console
    exporter's), with what to do instead; else None."""
    if not isinstance(document, dict):
        return None
    if document.get("format") == "adk-otel-summary":
        return (
            "an adk-otel summary (adk-otel summarize -o), not traces: give it to "
            "adk-otel compare as the baseline"
        )
    if "eval_cases" in document and "eval_set_id" in document:
        return (
            "an ADK eval set (adk-otel evalset -o), not traces: run it with adk eval, "
            "or give adk-otel the trace files it was made from"
        )
    context = document.get("context")
    if "name" in document and isinstance(context, dict) and "trace_id" in context:
        return (
            "the OpenTelemetry SDK's console exporter output (OTEL_TRACES_EXPORTER=console), "
            "printed for reading, not OTLP JSON; " + FILE_EXPORTER_HINT
        )
    return None


def holds_other_signal(document: Any) -> bool:
    """Whether a parsed document holds log records or metrics (not spans):
    another signal's data, as a collector writes its logs or metrics file."""
    if not isinstance(document, dict):
        return False
    for key, (scopes, items) in _SIGNAL_ITEMS.items():
        resources = document.get(key)
        for resource in resources if isinstance(resources, list) else ():
            found = resource.get(scopes) if isinstance(resource, dict) else None
            for scope in found if isinstance(found, list) else ():
                if isinstance(scope, dict) and isinstance(scope.get(items), list) and scope[items]:
                    return True
    return False


def iter_text_documents(
    lines: Iterable[bytes | str], source: str, *, max_document: int | None = None
) -> Iterator[tuple[str, Any]]:
    """``(where, parsed JSON)`` for each document, one line at a time (JSON
    Lines). If the first line is not JSON on its own, the input is taken as
    one pretty-printed document and read whole, up to ``max_document`` bytes.
    A line with a ``number`` attribute gives its own line number (a reader
    that skips blank lines says where each line was)."""
    iterator = iter(lines)
    line_no = 0
    for raw in iterator:
        line_no = getattr(raw, "number", line_no + 1)
        line = _text(raw, source, first=line_no == 1)
        if not line.strip():
            continue
        try:
            document = _loads(line, f"{source}: line {line_no}")
        except json.JSONDecodeError as exc:
            if line.lstrip("\ufeff \t\r\n")[:1] not in ("{", "["):  # no document starts here
                raise OtlpJsonError(f"{source}: line {line_no}: invalid JSON ({exc.msg})") from None
            yield _whole(line, iterator, line_no, source, max_document)
            return
        yield f"{source}: line {line_no}", document
        break
    else:
        raise OtlpJsonError(f"{source}: empty, no OTLP JSON in it")
    for raw in iterator:
        line_no = getattr(raw, "number", line_no + 1)
        line = _text(raw, source, first=False)
        if not line.strip():
            continue
        where = f"{source}: line {line_no}"
        try:
            document = _loads(line, where)
        except json.JSONDecodeError as exc:
            raise OtlpJsonError(f"{where}: invalid JSON ({exc.msg})") from None
        yield where, document


def _text(raw: bytes | str, source: str, *, first: bool) -> str:
    if isinstance(raw, str):
        return raw
    try:
        return raw.decode("utf-8-sig" if first else "utf-8")
    except UnicodeDecodeError:
        raise OtlpJsonError(not_text(source)) from None


def not_text(source: str) -> str:
    """What binary input that is no trace file is told."""
    return (
        f"{source}: not a text file, so not OTLP JSON (nor OTLP protobuf, which is read"
        " length-prefixed as the collector writes it, or as one OTLP/HTTP request body)"
    )


def _whole(
    first: str,
    rest: Iterator[bytes | str],
    first_no: int,
    source: str,
    max_document: int | None,
) -> tuple[str, Any]:
    """The input from ``first`` on as one JSON document."""
    limit = max_document if max_document is not None else sys.maxsize
    remainder = getattr(rest, "remainder", None)
    if remainder is not None:  # a bounded reader hands the rest over in one piece
        data = remainder(max(limit - len(first), 0))
        size = len(first) + len(data)
        parts = [first, _text(data, source, first=False)] if size <= limit else []
    else:
        parts, size, line_no = [first], len(first), first_no
        for raw in rest:
            number = getattr(raw, "number", line_no + 1)
            gap = number - line_no - 1  # blank lines a reader skipped: kept for line numbers
            size += gap + len(raw)
            if size > limit:
                break
            if gap > 0:
                parts.append("\n" * gap)
            parts.append(_text(raw, source, first=False))
            line_no = number
    if size > limit:
        where = f"{source}: line {first_no}"
        raise OtlpJsonError(over(where, "a JSON document longer than allowed", "document", limit))
    text = "".join(parts)
    del parts
    try:
        return f"{source}: line {first_no}", _loads(text, source)
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":  # documents one after another: the console exporter's
            known = None
            with contextlib.suppress(ValueError, RecursionError):
                known = known_file(json.JSONDecoder().raw_decode(text)[0])
            if known is not None:
                raise OtlpJsonError(f"{source}: {known}") from None
        line_no = first_no + exc.lineno - 1
        raise OtlpJsonError(f"{source}: line {line_no}: invalid JSON ({exc.msg})") from None


def _loads(text: str, where: str) -> Any:
    """``json.loads``, with nesting too deep for the parser, or an integer
    longer than Python converts (4,300 digits), reported as bad input."""
    try:
        return json.loads(text)
    except RecursionError:
        raise OtlpJsonError(f"{where}: nested too deeply to be OTLP JSON") from None
    except json.JSONDecodeError:
        raise
    except ValueError as exc:
        reason = str(exc).split(";", 1)[0]
        raise OtlpJsonError(f"{where}: not OTLP JSON ({reason})") from None


# -- decoding (plain JSON into plain records: no protobuf message built per span) ---


class _Invalid(ValueError):
    """A field that OTLP JSON does not allow; the message names its path."""


_KIND_NAMES = ("UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER")
_STATUS_NAMES = ("UNSET", "OK", "ERROR")


def _traces(document: dict[str, Any]) -> list[SpanRecord]:
    records: list[SpanRecord] = []
    for i, resource_spans in enumerate(_list(document, "resourceSpans", "")):
        at = f"resourceSpans[{i}]"
        resource_spans = _object(resource_spans, at)
        resource = _object(resource_spans.get("resource") or {}, f"{at}.resource")
        resource_attributes = _attributes(resource, f"{at}.resource")
        for k, scope_spans in enumerate(_list(resource_spans, "scopeSpans", at)):
            at_scope = f"{at}.scopeSpans[{k}]"
            scope_spans = _object(scope_spans, at_scope)
            scope = _object(scope_spans.get("scope") or {}, f"{at_scope}.scope")
            scope_name = _string(scope.get("name"), f"{at_scope}.scope.name") or None
            scope_version = _string(scope.get("version"), f"{at_scope}.scope.version") or None
            for n, span in enumerate(_list(scope_spans, "spans", at_scope)):
                at_span = f"{at_scope}.spans[{n}]"
                records.append(
                    _span(
                        _object(span, at_span),
                        at_span,
                        resource_attributes,
                        scope_name,
                        scope_version,
                    )
                )
    return records


def _span(
    span: dict[str, Any],
    at: str,
    resource: dict[str, Any],
    scope: str | None,
    scope_version: str | None,
) -> SpanRecord:
    status = _object(span.get("status") or {}, f"{at}.status")
    events: list[SpanEvent] = []
    for i, event in enumerate(_list(span, "events", at)):
        at_event = f"{at}.events[{i}]"
        event = _object(event, at_event)
        events.append(
            SpanEvent(
                name=_string(event.get("name"), f"{at_event}.name"),
                time_ns=_int64(event.get("timeUnixNano"), f"{at_event}.timeUnixNano"),
                attributes=_attributes(event, at_event),
            )
        )
    return SpanRecord(
        trace_id=_id(span.get("traceId"), 16, f"{at}.traceId"),
        span_id=_id(span.get("spanId"), 8, f"{at}.spanId"),
        parent_id=_id(span.get("parentSpanId"), 8, f"{at}.parentSpanId") or None,
        name=_string(span.get("name"), f"{at}.name"),
        kind=_enum(span.get("kind"), _KIND_NAMES, "SPAN_KIND_", f"{at}.kind"),
        status_code=_enum(status.get("code"), _STATUS_NAMES, "STATUS_CODE_", f"{at}.status.code"),
        status_description=_string(status.get("message"), f"{at}.status.message") or None,
        start_ns=_int64(span.get("startTimeUnixNano"), f"{at}.startTimeUnixNano"),
        end_ns=_int64(span.get("endTimeUnixNano"), f"{at}.endTimeUnixNano") or None,
        attributes=_attributes(span, at),
        events=tuple(events),
        resource=resource,
        scope=scope,
        scope_version=scope_version,
    )


def _list(container: dict[str, Any], key: str, at: str) -> list[Any]:
    value = container.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise _Invalid(f"{at + '.' if at else ''}{key} must be a list")
    return value


def _object(value: Any, at: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Invalid(f"{at} must be an object")
    return value


def _string(value: Any, at: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _Invalid(f"{at} must be a string")
    return value


def _int64(value: Any, at: str) -> int:
    """int64/uint64 fields: a decimal string in OTLP JSON, a number also accepted."""
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and _INT64.fullmatch(value.strip()):
        number = int(value)
    else:
        raise _Invalid(f"{at} must be an integer (as a string); got {_short(value)}")
    if not -(2**63) <= number < 2**64:
        raise _Invalid(f"{at} is out of the 64-bit range; got {_short(value)}")
    return number


_INT64 = re.compile(r"-?[0-9]{1,20}")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _enum(value: Any, names: tuple[str, ...], prefix: str, at: str) -> str:
    """An enum as its integer (OTLP JSON) or its protobuf name."""
    if value is None:
        return names[0]
    if isinstance(value, int) and not isinstance(value, bool):
        return names[value] if 0 <= value < len(names) else str(value)
    if isinstance(value, str) and value.removeprefix(prefix) in names:
        return value.removeprefix(prefix)
    raise _Invalid(f"{at}: {value!r} is not a valid value")


def _id(value: Any, size: int, at: str) -> str:
    """Hex id (OTLP JSON); base64 (protobuf's JSON mapping) is accepted too."""
    if value is None or value == "":
        return ""
    if isinstance(value, str):
        if len(value) == size * 2:
            try:
                return bytes.fromhex(value).hex()
            except ValueError:
                pass
        try:
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raw = b""
        if len(raw) == size:
            return raw.hex()
    raise _Invalid(f"{at.rsplit('.', 1)[-1]} {value!r} is not {size * 2} hex digits")


def _attributes(container: dict[str, Any], at: str) -> dict[str, Any]:
    attributes: dict[str, Any] = {}
    for i, pair in enumerate(_list(container, "attributes", at)):
        pair = _object(pair, f"{at}.attributes[{i}]")
        key = _string(pair.get("key"), f"{at}.attributes[{i}].key")
        attributes[key] = _any_value(pair.get("value") or {}, f"{at}.attributes[{key}]")
    return attributes


def _any_value(value: Any, at: str) -> Any:
    value = _object(value, at)
    if "stringValue" in value:
        return _string(value["stringValue"], at)
    if "boolValue" in value:
        if not isinstance(value["boolValue"], bool):
            raise _Invalid(f"{at} boolValue must be true or false")
        return value["boolValue"]
    if "intValue" in value:
        return _int64(value["intValue"], at)
    if "doubleValue" in value:
        number = value["doubleValue"]
        if isinstance(number, int | float) and not isinstance(number, bool):
            return float(number)
        if number in ("NaN", "Infinity", "-Infinity"):
            return float(number.lower().replace("infinity", "inf"))
        raise _Invalid(f"{at} doubleValue must be a number")
    if "arrayValue" in value:
        items = _list(_object(value["arrayValue"], at), "values", at)
        return tuple(_any_value(item, f"{at}[{i}]") for i, item in enumerate(items))
    if "kvlistValue" in value:
        return _attributes(
            {"attributes": _list(_object(value["kvlistValue"], at), "values", at)}, at
        )
    if "bytesValue" in value:
        try:
            return base64.b64decode(_string(value["bytesValue"], at), validate=True)
        except (binascii.Error, ValueError):
            raise _Invalid(f"{at} bytesValue must be base64") from None
    return None


# -- ids (writing) -------------------------------------------------------------------


def _convert_ids(document: dict[str, Any]) -> None:
    """protobuf's base64 ids -> OTLP JSON's hex, in place (spans and their links)."""
    for resource_spans in document.get("resourceSpans", []):
        for scope_spans in resource_spans.get("scopeSpans", []):
            for span in scope_spans.get("spans", []):
                for obj in (span, *span.get("links", [])):
                    for key in _ID_FIELDS:
                        if key in obj:
                            obj[key] = base64.b64decode(obj[key]).hex()
