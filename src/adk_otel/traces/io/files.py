"""Trace files as the OpenTelemetry Collector's ``file`` exporter leaves them.

The exporter writes one of these, per file (rotation starts a new file
``<name>-<timestamp>[-<reason>].<ext>`` next to the current one):

* ``format: json`` (the default): one OTLP JSON object per line.
* ``format: proto``: each ``TracesData`` message preceded by its length as
  4 bytes, big-endian.
* ``compression: zstd``: each message compressed as its own zstd frame and
  length-prefixed, json or proto alike; with the exporter's native
  compression, the whole file is one zstd stream holding the two formats
  above. Users also gzip whole files.

So a file is read by its bytes, not its name: gzip and zstd by their magic
numbers, then JSON text or length-prefixed messages (a prefix starts with a
byte below 0x09 for any message under 144 MiB; JSON text never does). Every
input is read as a stream: JSON Lines one line at a time, messages one at a
time, so memory holds the spans kept, not the file. A single pretty-printed
JSON document is the exception: it is read whole. Every size is bounded
(:mod:`.limits`): a line, a document, a message, what a compressed file
inflates to, and how much input may pass without a span. :func:`read_traces` reads
files twice to keep whole traces in the same bounded memory.
"""

from __future__ import annotations

import glob
import gzip
import io
import os
import re
import sys
import zlib
from collections.abc import Callable, Container, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from .limits import ReadLimits, over
from .lines import BoundedLines, Spanless
from .model import SpanRecord
from .otlp_json import (
    OtlpJsonError,
    document_records,
    holds_other_signal,
    iter_text_documents,
    loads_spans,
    not_text,
)

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
ZSTD_INSTALL = "pip install 'adk-otel[zstd]'"
_PREFIX = 4
_CHUNK = 1 << 20
_FEED = 1 << 10
_GLOB_CHARS = frozenset("*?[")

Keep = Callable[[SpanRecord], bool]


# -- which files ---------------------------------------------------------------


def expand(arguments: Sequence[str]) -> list[str]:
    """Files named by the arguments: a file, ``-`` (stdin), a directory (the
    files in it, not hidden ones, by name) or a glob pattern (expanded here,
    so it may be quoted). A file named twice is read once."""
    files: list[str] = []
    for argument in arguments:
        if argument == "-":
            files.append(argument)
        elif Path(argument).is_dir():
            found = sorted(
                str(path)
                for path in Path(argument).iterdir()
                if path.is_file() and not path.name.startswith(".")
            )
            if not found:
                raise OtlpJsonError(f"{argument}: an empty directory, no trace files in it")
            files += found
        elif _GLOB_CHARS.intersection(argument) and not Path(argument).exists():
            found = sorted(path for path in glob.glob(argument) if Path(path).is_file())
            if not found:
                raise OtlpJsonError(f"{argument}: no file matches this pattern")
            files += found
        else:
            files.append(argument)
    unique: dict[str, str] = {}
    for file in files:
        unique.setdefault(file if file == "-" else _identity(file), file)
    return list(unique.values())


def _identity(file: str) -> str:
    """The file's real path, to read it once; a symlink loop (reported when
    opened) by its own path."""
    try:
        return str(Path(file).resolve())
    except (OSError, RuntimeError):
        return os.path.abspath(file)


def read_records(
    arguments: Sequence[str], keep: Keep | None = None, *, limits: ReadLimits | None = None
) -> list[SpanRecord]:
    """Every span in the files (``keep``: only those it accepts), merged.
    ``limits``: see :class:`~.limits.ReadLimits` (default: from the environment)."""
    return [
        record
        for _, record in _spans(expand(arguments), arguments, _limits(limits))
        if keep is None or keep(record)
    ]


def iter_records(
    arguments: Sequence[str], *, limits: ReadLimits | None = None
) -> Iterator[SpanRecord]:
    """Every span in the files, one at a time as they are read: memory holds
    one document (or message), not the files. Errors and ``limits`` as
    :func:`read_records`."""
    for _, record in _spans(expand(arguments), arguments, _limits(limits)):
        yield record


def read_traces(
    arguments: Sequence[str],
    wanted: Keep,
    trace_ids: Container[str] | None = None,
    *,
    limits: ReadLimits | None = None,
) -> list[SpanRecord]:
    """Whole traces: every span of each trace in which ``wanted`` accepts a
    span (``wanted`` is asked once per span), as a trace search finds them.

    Memory holds the traces kept, not the files: a first pass over the files
    collects the matching trace ids, a second reads those traces' spans.
    Stdin cannot be read twice: its spans (only those of ``trace_ids``, if
    given) are held by trace until the end, then the matching traces kept.
    """
    bounds = _limits(limits)
    files = expand(arguments)
    matched: set[str] = set()
    from_stdin: dict[str, list[SpanRecord]] = {}
    for file, record in _spans(files, arguments, bounds):
        if wanted(record):
            matched.add(record.trace_id)
        if file == "-" and (trace_ids is None or record.trace_id in trace_ids):
            from_stdin.setdefault(record.trace_id, []).append(record)
    records: list[SpanRecord] = []
    if not matched:
        return records
    for file in files:
        if file == "-":
            records += [r for trace, held in from_stdin.items() if trace in matched for r in held]
            continue
        # The first pass rejected a lone empty file; none is an error now.
        for found in _file_records(file, bounds, empty_ok=True):
            if found is not None and found.trace_id in matched:
                records.append(found)
    return records


def read_spans(
    source: str | Path | IO[str], *, limits: ReadLimits | None = None
) -> list[SpanRecord]:
    """Every span in a trace file: a path (streamed, in any layout this module
    reads: gzip, zstd, protobuf) or an open text file of OTLP JSON."""
    if isinstance(source, str | Path):
        if Path(source).is_dir():
            raise OtlpJsonError(f"{source}: is a directory, not an OTLP JSON file")
        return read_records([str(source)], limits=limits)
    return loads_spans(source.read(), source=getattr(source, "name", "<input>"))


def _limits(limits: ReadLimits | None) -> ReadLimits:
    if limits is not None:
        return limits
    try:
        return ReadLimits.from_env()
    except ValueError as exc:
        raise OtlpJsonError(str(exc)) from None


def _spans(
    files: Sequence[str], arguments: Sequence[str], limits: ReadLimits
) -> Iterator[tuple[str, SpanRecord]]:
    """Each span with the file it came from; an error if no file held traces."""
    traces_found = False
    for file in files:
        # One of several files may be empty: the exporter's current file just
        # after a rotation. A lone empty file is an error.
        for found in _file_records(file, limits, empty_ok=len(files) > 1):
            if found is None:
                traces_found = True
            else:
                yield file, found
    if not traces_found:
        what = files[0] if len(files) == 1 else ", ".join(arguments)
        raise OtlpJsonError(f"{what}: holds metrics or logs only, no traces")


def _file_records(file: str, limits: ReadLimits, *, empty_ok: bool) -> Iterator[SpanRecord | None]:
    """The file's spans; ``None`` once for each document holding traces."""
    if file == "-":
        if sys.stdin is None:
            raise OtlpJsonError("-: stdin is closed, nothing to read")
        stdin: Any = getattr(sys.stdin, "buffer", None)
        if stdin is None:  # a text-only stand-in for stdin
            stdin = io.BytesIO(sys.stdin.read().encode("utf-8", "surrogateescape"))
        yield from _stream_records(stdin, "<stdin>", limits, empty_ok=empty_ok)
        return
    try:
        handle = open(file, "rb")  # noqa: SIM115 (closed below, also on errors)
    except FileNotFoundError:
        raise OtlpJsonError(f"{file}: no such file") from None
    except IsADirectoryError:
        raise OtlpJsonError(f"{file}: is a directory, not a trace file") from None
    except OSError as exc:
        raise OtlpJsonError(f"{file}: cannot read ({exc.strerror or exc})") from None
    with handle:
        yield from _stream_records(handle, file, limits, empty_ok=empty_ok)


# -- how the bytes are packed ------------------------------------------------------


def _stream_records(
    raw: IO[bytes], source: str, limits: ReadLimits, *, empty_ok: bool
) -> Iterator[SpanRecord | None]:
    stream = io.BufferedReader(_Guarded(raw, source), buffer_size=_CHUNK)
    head = stream.peek(4)[:4]
    if head.startswith(GZIP_MAGIC):
        inner = _Guarded(gzip.GzipFile(fileobj=stream, mode="rb"), source, "gzip", limits)
        stream = io.BufferedReader(inner, buffer_size=_CHUNK)
    elif head == ZSTD_MAGIC:
        inner = _Guarded(_zstd_stream(stream, source), source, "zstd", limits)
        stream = io.BufferedReader(inner, buffer_size=_CHUNK)
    first = stream.peek(1)[:1]
    spanless = Spanless(source, limits.without_spans)
    if not first and empty_ok:
        return
    if first and first[0] < 0x09:
        yield from _framed_records(stream, source, limits, spanless)
    elif first == b"\n" and _is_protobuf(stream.peek(_SNIFF)[:_SNIFF]):
        yield from _raw_message(stream, source, limits)
    else:
        if b"\0" in stream.peek(_SNIFF)[:_SNIFF]:  # binary: say so now, not after a long "line"
            raise OtlpJsonError(not_text(source))
        lines = BoundedLines(stream, source, limits.document, spanless)
        documents = iter_text_documents(lines, source, max_document=limits.document)
        for where, document in documents:
            spans = False
            for found in _document(document, where):
                spans = spans or found is not None
                yield found
            if spans:
                spanless.spans(lines.consumed)
            elif holds_other_signal(document):
                spanless.other_signal(lines.consumed)
            else:
                spanless.check(lines.consumed)


_SNIFF = 64
_JSON_START = re.compile(rb"[ \t\r\n]*(\xef\xbb\xbf)?[ \t\r\n]*([{\[]|$)")


def _is_protobuf(head: bytes) -> bool:
    """A raw OTLP protobuf request (as an exporter POSTs it) starts with field
    1 (``resource_spans``, length-delimited): byte ``0a``, the newline; JSON
    text starting with blank lines goes on to ``{`` after them."""
    return _JSON_START.match(head) is None


def _raw_message(stream: IO[bytes], source: str, limits: ReadLimits) -> Iterator[SpanRecord | None]:
    """One ``ExportTraceServiceRequest`` / ``TracesData``, not length-prefixed:
    an OTLP/HTTP request body (several bodies, concatenated, read as one)."""
    payload = stream.read(limits.message + 1)
    if len(payload) > limits.message:
        raise OtlpJsonError(
            over(source, "an OTLP protobuf body longer than allowed", "message", limits.message)
        )
    yield from _protobuf(payload, source, "not OTLP JSON, nor an OTLP protobuf request body")


def _document(document: Any, where: str) -> Iterator[SpanRecord | None]:
    records = document_records(document, where)
    if records is not None:
        yield None
        yield from records


def _framed_records(
    stream: IO[bytes], source: str, limits: ReadLimits, spanless: Spanless
) -> Iterator[SpanRecord | None]:
    """Length-prefixed messages: protobuf ``TracesData``, or (the exporter's
    per-message compression) zstd frames holding protobuf or OTLP JSON."""
    number = 0
    consumed = 0
    while prefix := stream.read(_PREFIX):
        number += 1
        where = f"{source}: message {number}"
        if len(prefix) < _PREFIX:
            raise OtlpJsonError(f"{where}: truncated (a length prefix of {len(prefix)} bytes)")
        size = int.from_bytes(prefix, "big")
        if size == 0:
            raise OtlpJsonError(
                f"{where}: a length prefix of 0, an empty message (an exporter never"
                " writes one: not a trace file)"
            )
        if size > limits.message:
            raise OtlpJsonError(
                over(where, f"the length prefix says {size} bytes", "message", limits.message)
            )
        payload = _read_exactly(stream, size)
        if len(payload) < size:
            raise OtlpJsonError(
                f"{where}: the length prefix says {size} bytes but only {len(payload)} follow"
                " (truncated, or not a trace file)"
            )
        consumed += _PREFIX + size
        if payload.startswith(ZSTD_MAGIC):
            payload = _zstd_decompress(payload, where, limits.message)
        if payload.lstrip()[:1] == b"{":
            found = list(_message_json(payload, where, limits))
        else:
            found = list(_protobuf(payload, where, "not OTLP protobuf traces"))
        del payload
        if any(record is not None for record in found):
            spanless.spans(consumed)
        else:
            spanless.check(consumed)
        yield from found


def _protobuf(payload: bytes, where: str, problem: str) -> Iterator[SpanRecord | None]:
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

    message = TracesData()
    try:
        message.ParseFromString(payload)
    except DecodeError:
        raise OtlpJsonError(f"{where}: {problem}") from None
    yield None
    yield from SpanRecord.from_request(message)


def _message_json(payload: bytes, where: str, limits: ReadLimits) -> Iterator[SpanRecord | None]:
    lines = io.BytesIO(payload)
    for line_where, document in iter_text_documents(lines, where, max_document=limits.document):
        yield from _document(document, line_where)


def _read_exactly(stream: IO[bytes], size: int) -> bytes:
    """Up to ``size`` bytes, read in chunks: a hostile prefix never allocates
    more than the input holds."""
    parts: list[bytes] = []
    left = size
    while left:
        part = stream.read(min(left, _CHUNK))
        if not part:
            break
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


# -- compression -------------------------------------------------------------------


class _Guarded(io.RawIOBase):
    """A readable stream whose decompression and I/O errors become one line;
    with ``limits``, a decompressed one that may not inflate past them."""

    def __init__(
        self, inner: Any, source: str, packing: str = "", limits: ReadLimits | None = None
    ) -> None:
        self._inner = inner
        self._source = source
        self._damaged = f"{source}: truncated or corrupt {packing} data".replace("  ", " ")
        self._packing = packing
        self._cap = limits.inflated if limits is not None else None
        self._total = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        try:
            data = self._inner.read(len(buffer))
        except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
            raise OtlpJsonError(f"{self._damaged} ({_reason(exc)})") from None
        except OtlpJsonError:
            raise
        except OSError as exc:
            raise OtlpJsonError(f"{self._source}: cannot read ({exc.strerror or exc})") from None
        except Exception as exc:  # zstd libraries raise their own error types
            if type(exc).__name__ not in ("ZstdError", "ZstdDecompressionError"):
                raise
            raise OtlpJsonError(f"{self._damaged} ({_reason(exc)})") from None
        self._total += len(data)
        if self._cap is not None and self._total > self._cap:
            what = f"{self._packing} data inflating to more than allowed"
            raise OtlpJsonError(over(self._source, what, "inflated", self._cap))
        buffer[: len(data)] = data
        return len(data)


def _reason(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _zstd_module(source: str) -> Any:
    """The standard library's zstd (Python 3.14+), else ``zstandard``."""
    try:
        from compression import zstd  # type: ignore[import-not-found, unused-ignore]

        return zstd
    except ImportError:
        pass
    try:
        import zstandard

        return zstandard
    except ImportError:
        raise OtlpJsonError(
            f"{source}: zstd-compressed; reading it needs zstd support: {ZSTD_INSTALL}"
        ) from None


def _zstd_stream(stream: IO[bytes], source: str) -> Any:
    """A zstd stream of one or more frames (the exporter starts a frame per flush)."""
    module = _zstd_module(source)
    if module.__name__ == "zstandard":
        return _StrictZstd(module, stream)
    return module.ZstdFile(stream)


class _StrictZstd:
    """``zstandard``'s stream reader returns short data on a cut-off frame;
    this one says so, as gzip and the standard library's zstd do."""

    def __init__(self, module: Any, stream: IO[bytes]) -> None:
        self._module = module
        self._stream = stream
        self._decompressor = module.ZstdDecompressor().decompressobj()
        self._pending = b""
        self._in_frame = False

    def read(self, size: int) -> bytes:
        while len(self._pending) < size:
            data = self._stream.read(_FEED)
            if not data:
                if self._in_frame:
                    raise self._module.ZstdError("input ends inside a zstd frame")
                break
            self._feed(data)
        out, self._pending = self._pending[:size], self._pending[size:]
        return out

    def _feed(self, data: bytes) -> None:
        # Fed a little at a time: a zstd block can inflate 32,768-fold, so one
        # call on a megabyte could return gigabytes; on _FEED bytes, at most
        # a few tens of MiB, and the reader asks for more only as it needs it.
        for start in range(0, len(data), _FEED):
            piece = data[start : start + _FEED]
            while piece:
                self._in_frame = True
                self._pending += self._decompressor.decompress(piece)
                if not self._decompressor.eof:
                    break
                piece = self._decompressor.unused_data
                self._decompressor = self._module.ZstdDecompressor().decompressobj()
                self._in_frame = False


def _zstd_decompress(payload: bytes, where: str, limit: int) -> bytes:
    """One zstd frame (the exporter's per-message compression), inflated to at
    most ``limit`` bytes."""
    stream = _Guarded(_zstd_stream(io.BytesIO(payload), where), where, "zstd")
    data = io.BufferedReader(stream, buffer_size=_CHUNK).read(limit + 1)
    if len(data) > limit:
        what = "a zstd frame inflating to more than allowed"
        raise OtlpJsonError(over(where, what, "message", limit))
    return data
