"""Trace files in the exact framing of the OpenTelemetry Collector's ``file`` exporter.

What the exporter (exporter/fileexporter in opentelemetry-collector-contrib) writes:

* ``format: json``: the OTLP JSON of each export batch, then ``\\n``.
* ``format: proto``: each ``TracesData`` message preceded by its size as a
  4-byte big-endian unsigned integer.
* ``compression: zstd`` (default mode): every marshalled message compressed
  on its own (one zstd frame) and then length-prefixed, json or proto alike.
* ``compression: zstd`` with native compression: the file is zstd frames
  (a new one after each flush) around the plain json or proto framing.
* rotation: the current file keeps ``path``; older ones are renamed
  ``<name>-<UTC timestamp>[-<reason>].<ext>``.
* ``group_by``: ``path`` holds one ``*``, replaced by a resource attribute.

``ExportTraceServiceRequest`` (what the SDK's exporter sends) and
``TracesData`` (what the exporter marshals) have the same wire format.
"""

from __future__ import annotations

import gzip
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import zstandard

from adk_otel.traces.io.otlp_json import request_to_line


def json_messages(requests: Sequence[Any]) -> list[bytes]:
    return [request_to_line(request).encode() for request in requests]


def proto_messages(requests: Sequence[Any]) -> list[bytes]:
    return [request.SerializeToString() for request in requests]


def as_lines(messages: Sequence[bytes]) -> bytes:
    return b"".join(message + b"\n" for message in messages)


def length_prefixed(messages: Sequence[bytes]) -> bytes:
    return b"".join(len(message).to_bytes(4, "big") + message for message in messages)


def zstd_frame(data: bytes) -> bytes:
    return zstandard.ZstdCompressor().compress(data)


def zstd_each(messages: Sequence[bytes]) -> bytes:
    """The exporter's default zstd mode: a frame per message, length-prefixed."""
    return length_prefixed([zstd_frame(message) for message in messages])


def zstd_stream(framed: Sequence[bytes]) -> bytes:
    """Native compression: one frame per flush around the plain framing."""
    return b"".join(zstd_frame(part) for part in framed)


def file_bytes(fmt: str, requests: Sequence[Any]) -> bytes:
    """The bytes of one file in the named exporter configuration (or a gzipped file)."""
    json_msgs, proto_msgs = json_messages(requests), proto_messages(requests)
    half = len(requests) // 2 or 1
    return {
        "json": lambda: as_lines(json_msgs),
        "proto": lambda: length_prefixed(proto_msgs),
        "json+zstd": lambda: zstd_each(json_msgs),
        "proto+zstd": lambda: zstd_each(proto_msgs),
        "json+native-zstd": lambda: zstd_stream(
            [as_lines(json_msgs[:half]), as_lines(json_msgs[half:])]
        ),
        "proto+native-zstd": lambda: zstd_stream(
            [length_prefixed(proto_msgs[:half]), length_prefixed(proto_msgs[half:])]
        ),
        "json.gz": lambda: gzip.compress(as_lines(json_msgs)),
        "proto.gz": lambda: gzip.compress(length_prefixed(proto_msgs)),
    }[fmt]()


FORMATS = (
    "json",
    "proto",
    "json+zstd",
    "proto+zstd",
    "json+native-zstd",
    "proto+native-zstd",
    "json.gz",
    "proto.gz",
)

BACKUP_STAMPS = ("2026-11-24T09-00-00.000-size", "2026-11-24T09-05-00.000-size")


def write_rotated(directory: Path, name: str, fmt: str, requests: Sequence[Any]) -> list[Path]:
    """The requests spread over a rotated set: backups first, the current file last."""
    directory.mkdir(parents=True, exist_ok=True)
    stem, dot, ext = name.partition(".")
    names = [f"{stem}-{stamp}{dot}{ext}" for stamp in BACKUP_STAMPS] + [name]
    chunks: list[list[Any]] = [[] for _ in names]
    for index, request in enumerate(requests):
        chunks[index * len(names) // len(requests)].append(request)
    paths = []
    for file_name, chunk in zip(names, chunks, strict=True):
        path = directory / file_name
        path.write_bytes(file_bytes(fmt, chunk) if chunk else b"")
        paths.append(path)
    return paths


def logs_lines(requests: Sequence[Any]) -> bytes:
    """``ExportLogsServiceRequest`` s as the file exporter's ``format: json``
    writes a logs pipeline's batches: OTLP JSON, one per line, hex ids."""
    import base64
    import json

    from google.protobuf import json_format

    lines = []
    for request in requests:
        document = json_format.MessageToDict(request)
        for resource in document.get("resourceLogs", []):
            for scope in resource.get("scopeLogs", []):
                for record in scope.get("logRecords", []):
                    for key in ("traceId", "spanId"):
                        if key in record:
                            record[key] = base64.b64decode(record[key]).hex()
        lines.append(json.dumps(document).encode() + b"\n")
    return b"".join(lines)
