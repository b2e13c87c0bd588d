"""Evaluation results (``gen_ai.evaluation.result``) read back, beside the spans.

adk-otel sends ADK's eval scores as log records in the context of the
invocation span each judges, or, opted in, as span events on a small
``evaluate {case}`` span under it (docs/evaluations.md). Both are read into
:class:`EvaluationResult`, keyed by the judged span's ``(trace_id, span_id)``,
so the tree can print scores under their invocation and tests can select them:

* :func:`from_span_records`: the span-event form, from spans already read;
* :func:`from_log_records`: SDK log records (an in-memory log exporter's);
* :func:`read_files`: the log form in OTLP JSON files (a collector's file
  exporter writes ``resourceLogs`` lines beside ``resourceSpans`` ones).
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ... import semconv as sc
from .model import SpanRecord

NOT_EVALUATED = "not_evaluated"
"""``error.type`` of a metric ADK could not evaluate (its evaluator raised,
or it produced nothing): ADK logs the exception, its results do not carry it."""
MAX_EXPLANATION = 4096
"""The rubric verdicts kept as ``gen_ai.evaluation.explanation``, at most."""


def rubric_explanation(verdicts: Iterable[tuple[object, float | None, object]]) -> str | None:
    """``gen_ai.evaluation.explanation`` of a rubric-based metric, from its
    ``(rubric id, score, rationale)`` triples: a line each,
    ``rubric_id: yes|no|n/a (rationale)``. The one format adk-otel sends the
    events in (``adk_otel.evaluations``) and reads ADK's result files into."""
    lines = []
    for rubric_id, score, rationale in verdicts:
        verdict = "n/a" if score is None else ("yes" if score >= 1 else "no")
        line = f"{rubric_id}: {verdict}"
        if rationale:
            line += f" ({rationale})"
        lines.append(line)
    text = "\n".join(lines)
    return text[:MAX_EXPLANATION] if text else None


MAX_LINE = 64 * 1024 * 1024
"""OTLP JSON lines (or a whole pretty-printed document) longer than this are
not read for evaluation results."""


@dataclass(frozen=True)
class EvaluationResult:
    """One metric's result for one invocation (``scope`` ``invocation``) or
    one eval case (``scope`` ``case``), in the judged span's context."""

    trace_id: str | None
    span_id: str | None
    name: str
    score: float | None = None
    label: str | None = None
    explanation: str | None = None
    error_type: str | None = None
    scope: str | None = None
    eval_set_id: str | None = None
    eval_case_id: str | None = None
    index: int | None = None
    attributes: Mapping[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool | None:
        """True for ``pass``, False for ``fail``, None for neither."""
        return {"pass": True, "fail": False}.get(self.label or "")

    def line(self) -> str:
        """``score <metric> <value> <label>`` and where it came from, one line."""
        score = "-" if self.score is None else f"{self.score:.3g}"
        words = ["score", self.name, score, self.label or self.attributes.get(sc.ADK_EVAL_STATUS)]
        if self.error_type:
            words.append(f"[{self.error_type}]")
        where = self.scope or "?"
        if self.scope == "invocation" and self.index is not None:
            where += f" {self.index}"
        if self.eval_case_id:
            where += f" of {self.eval_case_id}"
        return " ".join(str(w) for w in words if w is not None) + f" ({where})"


def from_attributes(
    attributes: Mapping[str, Any], trace_id: str | None, span_id: str | None
) -> EvaluationResult:
    """A result from an event's attributes and the span context it carries."""

    def text(key: str) -> str | None:
        value = attributes.get(key)
        return value if isinstance(value, str) else None

    score = attributes.get(sc.GEN_AI_EVALUATION_SCORE_VALUE)
    index = attributes.get(sc.ADK_EVAL_INVOCATION_INDEX)
    return EvaluationResult(
        trace_id=trace_id,
        span_id=span_id,
        name=text(sc.GEN_AI_EVALUATION_NAME) or "?",
        score=float(score)
        if isinstance(score, int | float) and not isinstance(score, bool)
        else None,
        label=text(sc.GEN_AI_EVALUATION_SCORE_LABEL),
        explanation=text(sc.GEN_AI_EVALUATION_EXPLANATION),
        error_type=text(sc.ERROR_TYPE),
        scope=text(sc.ADK_EVAL_SCOPE),
        eval_set_id=text(sc.ADK_EVAL_SET_ID),
        eval_case_id=text(sc.ADK_EVAL_CASE_ID),
        index=index if isinstance(index, int) and not isinstance(index, bool) else None,
        attributes=dict(attributes),
    )


def from_span_records(records: Iterable[SpanRecord]) -> list[EvaluationResult]:
    """The span-event form: each ``gen_ai.evaluation.result`` event, judged
    span = the parent of the span carrying it (the invocation span), labelled
    with that span's eval set and case."""
    results = []
    for record in records:
        for event in record.events:
            if event.name != sc.GEN_AI_EVALUATION_RESULT_EVENT:
                continue
            labels = {k: v for k, v in record.attributes.items() if k.startswith("adk.eval.")}
            results.append(
                from_attributes(
                    {**labels, **event.attributes},
                    record.trace_id,
                    record.parent_id or record.span_id,
                )
            )
    return results


def from_log_records(records: Iterable[Any]) -> list[EvaluationResult]:
    """SDK log records (``LogRecord``, or ``LogData`` holding one) that are
    ``gen_ai.evaluation.result`` events."""
    results = []
    for item in records:
        record = getattr(item, "log_record", item)
        if getattr(record, "event_name", None) != sc.GEN_AI_EVALUATION_RESULT_EVENT:
            continue
        trace_id, span_id = getattr(record, "trace_id", 0), getattr(record, "span_id", 0)
        results.append(
            from_attributes(
                dict(getattr(record, "attributes", None) or {}),
                format(trace_id, "032x") if trace_id else None,
                format(span_id, "016x") if span_id else None,
            )
        )
    return results


def _any_value(value: Any) -> Any:
    if not isinstance(value, dict):
        return None
    for key in ("stringValue", "boolValue"):
        if key in value:
            return value[key]
    if "intValue" in value:
        try:
            return int(value["intValue"])
        except (TypeError, ValueError):
            return None
    if "doubleValue" in value:
        number = value["doubleValue"]
        return float(number) if isinstance(number, int | float | str) else None
    if "arrayValue" in value:
        items = (value["arrayValue"] or {}).get("values") or []
        return tuple(_any_value(item) for item in items)
    return None


def _hex_id(value: Any, size: int) -> str | None:
    if not isinstance(value, str) or len(value) != size:
        return None
    try:
        return value.lower() if int(value, 16) else None
    except ValueError:
        return None


def from_otlp_json(document: Any) -> list[EvaluationResult]:
    """The ``gen_ai.evaluation.result`` log records of one OTLP JSON document
    (``resourceLogs``); anything malformed is skipped."""
    results: list[EvaluationResult] = []
    if not isinstance(document, dict):
        return results
    for resource in document.get("resourceLogs") or ():
        for scope in (resource or {}).get("scopeLogs") or ():
            for record in (scope or {}).get("logRecords") or ():
                if not isinstance(record, dict):
                    continue
                if record.get("eventName") != sc.GEN_AI_EVALUATION_RESULT_EVENT:
                    continue
                attributes: dict[str, Any] = {
                    pair["key"]: _any_value(pair.get("value"))
                    for pair in record.get("attributes") or ()
                    if isinstance(pair, dict) and isinstance(pair.get("key"), str)
                }
                results.append(
                    from_attributes(
                        attributes,
                        _hex_id(record.get("traceId"), 32),
                        _hex_id(record.get("spanId"), 16),
                    )
                )
    return results


def read_files(paths: Iterable[str]) -> list[EvaluationResult]:
    """The log-form results in OTLP JSON files, plain or gzipped (one
    document per line, or one document per file). Read a line at a time:
    memory holds one line, not the file. Files or lines that are not JSON
    (protobuf, zstd, damaged), and anything but a regular file, are skipped:
    the spans' reader reports on those, and bounds them (read the spans
    first: a file it accepted is within its limits)."""
    results: list[EvaluationResult] = []
    for path in paths:
        if not os.path.isfile(path):
            continue
        try:
            with open(path, "rb") as raw:
                stream = _unzipped(raw)
                head = stream.peek(_SNIFF)[:_SNIFF]
                if not head or b"\0" in head or head[0] < 0x09:
                    continue  # binary: protobuf, zstd, zeros
                results.extend(_stream_results(stream, path))
        except (OSError, EOFError, zlib.error):
            continue
    return results


_GZIP_MAGIC = b"\x1f\x8b"
_SNIFF = 64
_MARK = b"resourceLogs"


def _unzipped(raw: io.BufferedReader) -> gzip.GzipFile | io.BufferedReader:
    if raw.peek(2)[:2] == _GZIP_MAGIC:
        return gzip.GzipFile(fileobj=raw, mode="rb")
    return raw


def _stream_results(stream: io.BufferedIOBase, path: str) -> list[EvaluationResult]:
    results: list[EvaluationResult] = []
    unparsed = False
    while line := stream.readline(MAX_LINE + 1):
        if len(line) > MAX_LINE and not line.endswith(b"\n"):
            while line and not line.endswith(b"\n"):  # the rest of an over-long line
                line = stream.readline(MAX_LINE + 1)
            continue
        if _MARK not in line:
            continue
        try:
            results.extend(from_otlp_json(json.loads(line)))
        except ValueError:
            unparsed = True  # a line of a document spread over lines
    if unparsed and not results:  # one pretty-printed document: read it whole
        with open(path, "rb") as raw:
            text = _unzipped(raw).read(MAX_LINE + 1)
        if len(text) <= MAX_LINE:
            with contextlib.suppress(ValueError):
                results.extend(from_otlp_json(json.loads(text)))
    return results


def by_span(results: Iterable[EvaluationResult]) -> dict[tuple[str, str], list[EvaluationResult]]:
    """Results keyed by the judged span's ``(trace_id, span_id)``."""
    keyed: dict[tuple[str, str], list[EvaluationResult]] = {}
    for result in results:
        if result.trace_id and result.span_id:
            keyed.setdefault((result.trace_id, result.span_id), []).append(result)
    return keyed
