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
import json
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import IO, Any

from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from .trace_model import SpanRecord

_ID_FIELDS = {"traceId": 16, "spanId": 8, "parentSpanId": 8}
_OTHER_SIGNALS = ("resourceMetrics", "resourceLogs", "resourceProfiles")


class OtlpJsonError(ValueError):
    """Input that is not OTLP JSON traces; the message is one line."""


# -- writing -------------------------------------------------------------------


def request_to_dict(request: Any) -> dict[str, Any]:
    """An ``ExportTraceServiceRequest`` / ``TracesData`` as an OTLP JSON object."""
    document = json_format.MessageToDict(request, use_integers_for_enums=True)
    _convert_ids(document, _b64_to_hex)
    return document


def request_to_line(request: Any) -> str:
    """One file-exporter line (compact JSON, no trailing newline)."""
    return json.dumps(request_to_dict(request), separators=(",", ":"), ensure_ascii=False)


def spans_to_line(spans: Sequence[Any]) -> str:
    """SDK ``ReadableSpan``s encoded the way the OTLP exporters send them, as one line."""
    return request_to_line(encode_spans(spans))


def write_spans(destination: str | Path | IO[str], spans: Sequence[Any]) -> None:
    """Append the SDK spans as one line to a path or an open text file."""
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


class OtlpJsonFileExporter(SpanExporter):
    """A ``SpanExporter`` appending each export batch as one line to a file.

    For CI without a collector: export the app's spans here, then run
    ``adk-otel check`` on the file. Thread-safe; lines are never interleaved.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
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


def read_spans(source: str | Path | IO[str]) -> list[SpanRecord]:
    """Every span in an OTLP JSON file (path or open text file)."""
    if isinstance(source, str | Path):
        path = Path(source)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise OtlpJsonError(f"{path}: no such file") from None
        except IsADirectoryError:
            raise OtlpJsonError(f"{path}: is a directory, not an OTLP JSON file") from None
        except OSError as exc:
            raise OtlpJsonError(f"{path}: cannot read ({exc.strerror or exc})") from None
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise OtlpJsonError(f"{path}: not a text file, so not OTLP JSON") from None
        return loads_spans(text, source=str(path))
    return loads_spans(source.read(), source=getattr(source, "name", "<input>"))


def loads_spans(text: str, *, source: str = "<input>") -> list[SpanRecord]:
    """Every span in OTLP JSON text (JSON Lines or one document)."""
    records: list[SpanRecord] = []
    traces_found = False
    for line_no, document in _documents(text, source):
        where = f"{source}: line {line_no}"
        if not isinstance(document, dict):
            raise OtlpJsonError(
                f"{where}: not OTLP JSON (expected an object, got {type(document).__name__})"
            )
        if "resourceSpans" not in document:
            if any(key in document for key in _OTHER_SIGNALS):
                continue
            keys = ", ".join(sorted(document)[:5]) or "none"
            raise OtlpJsonError(f'{where}: not OTLP JSON traces (no "resourceSpans"; keys: {keys})')
        traces_found = True
        try:
            _convert_ids(document, _to_b64)
            message = _parse(document, TracesData())
        except (ValueError, TypeError, AttributeError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise OtlpJsonError(f"{where}: not valid OTLP JSON ({first})") from None
        records.extend(SpanRecord.from_request(message))
    if not traces_found:
        raise OtlpJsonError(f"{source}: holds metrics or logs only, no traces")
    return records


def _parse(document: dict[str, Any], message: Any) -> Any:
    try:
        return json_format.ParseDict(document, message, ignore_unknown_fields=True)
    except json_format.ParseError as exc:
        raise ValueError(str(exc)) from None


def _documents(text: str, source: str) -> list[tuple[int, Any]]:
    """``(line number, parsed JSON)`` for each document in ``text``."""
    if not text.strip():
        raise OtlpJsonError(f"{source}: empty, no OTLP JSON in it")
    try:
        return [(text[: len(text) - len(text.lstrip())].count("\n") + 1, json.loads(text))]
    except json.JSONDecodeError as whole:
        whole_error = whole
    documents: list[tuple[int, Any]] = []
    first_line = True
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            documents.append((line_no, json.loads(line)))
        except json.JSONDecodeError as exc:
            error = exc
            if first_line:
                # Not JSON Lines from the start: report the whole-document error.
                error, line_no = whole_error, whole_error.lineno
            raise OtlpJsonError(f"{source}: line {line_no}: invalid JSON ({error.msg})") from None
        first_line = False
    return documents


# -- ids -----------------------------------------------------------------------


def _convert_ids(document: Any, convert: Any) -> None:
    """Rewrite every trace/span id in place (spans and their links)."""
    for resource_spans in _items(document, "resourceSpans"):
        for scope_spans in _items(resource_spans, "scopeSpans"):
            for span in _items(scope_spans, "spans"):
                _convert_fields(span, convert)
                for link in _items(span, "links"):
                    _convert_fields(link, convert)


def _items(container: Any, key: str) -> list[Any]:
    value = container.get(key) if isinstance(container, dict) else None
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _convert_fields(obj: dict[str, Any], convert: Any) -> None:
    for key, size in _ID_FIELDS.items():
        value = obj.get(key)
        if isinstance(value, str):
            obj[key] = convert(value, size, key)


def _b64_to_hex(value: str, size: int, key: str) -> str:
    return base64.b64decode(value).hex()


def _to_b64(value: str, size: int, key: str) -> str:
    """Hex (OTLP JSON) or base64 (protobuf JSON) id -> base64 for the parser."""
    if not value:
        return ""
    if len(value) == size * 2:
        try:
            return base64.b64encode(bytes.fromhex(value)).decode()
        except ValueError:
            pass
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) == size:
        return value
    raise ValueError(f"{key} {value!r} is not {size * 2} hex digits")
