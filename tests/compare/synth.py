"""Synthetic runs as adk-otel would record them, drawn from a known distribution.

Each run is one invocation span, one agent span (``root``), its model calls
and tool calls, with the attributes adk-otel sets (``adk.span.kind``,
``adk.invocation.id``, ``adk.outcome``, token usage). The knobs shift one
property of the distribution at a time, so a test knows which gate must fire.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

from adk_otel import semconv as sc
from adk_otel.traces.io.model import SpanRecord

MS = 1_000_000


@dataclass(frozen=True)
class Shape:
    """The run distribution. Defaults: the baseline."""

    error_rate: float = 0.05
    token_scale: float = 1.0
    extra_tool_call: bool = False
    latency_scale: float = 1.0
    app: str = "shop"
    model_calls: int = 2
    """Model calls of most runs; 30 % make one more."""
    latency_ms: float | None = None
    """The run's latency, exactly (else drawn around 1 s)."""
    conversation: bool = False
    """Each run its own ``gen_ai.conversation.id`` (one session per run)."""


def runs(rng: random.Random, count: int, shape: Shape = Shape()) -> list[SpanRecord]:
    """``count`` runs' spans (children before their parents, as a batch exports them)."""
    records: list[SpanRecord] = []
    for _ in range(count):
        records += one_run(rng, shape)
    return records


def one_run(rng: random.Random, shape: Shape) -> list[SpanRecord]:
    trace_id = f"{rng.getrandbits(128):032x}"
    invocation_id = f"e-{rng.getrandbits(32):08x}"
    ids = iter(f"{rng.getrandbits(64):016x}" for _ in range(64))
    root_id, agent_id = next(ids), next(ids)
    start = 1_700_000_000 * 10**9
    total_ms = rng.lognormvariate(6.9, 0.5) * shape.latency_scale  # median ~1 s
    if shape.latency_ms is not None:
        total_ms = shape.latency_ms
    failed = rng.random() < shape.error_rate
    search_first = rng.random() < 0.2  # a second, rarer path
    model_calls = shape.model_calls + (rng.random() < 0.3)
    tools = ["lookup"] * (model_calls - 1)
    if search_first:
        tools[0] = "search"
    if shape.extra_tool_call:
        tools.append(tools[-1])  # the last tool once more: same route, one call more
    common = {sc.ADK_INVOCATION_ID: invocation_id, sc.GEN_AI_AGENT_NAME: "root"}
    children: list[SpanRecord] = []
    step = total_ms / (model_calls + len(tools) + 1)
    clock = start + MS
    tool_spans: list[tuple[str, int]] = []
    for index in range(model_calls):
        tokens_in = round(rng.lognormvariate(7.0, 0.3) * shape.token_scale)
        tokens_out = round(rng.lognormvariate(5.0, 0.3) * shape.token_scale)
        children.append(
            _span(
                trace_id,
                next(ids),
                agent_id,
                "generate_content m",
                clock,
                step,
                "ok",
                {
                    **common,
                    sc.ADK_SPAN_KIND: "model",
                    sc.GEN_AI_REQUEST_MODEL: "m",
                    sc.GEN_AI_USAGE_INPUT_TOKENS: tokens_in,
                    sc.GEN_AI_USAGE_OUTPUT_TOKENS: tokens_out,
                },
            )
        )
        clock += int(step * MS)
        if index < len(tools):
            tool_spans.append((tools[index], clock))
            clock += int(step * MS)
    for extra in tools[model_calls:]:
        tool_spans.append((extra, clock))
        clock += int(step * MS)
    for index, (name, at) in enumerate(tool_spans):
        outcome = "error" if failed and index == len(tool_spans) - 1 else "ok"
        children.append(_tool(trace_id, next(ids), agent_id, name, at, step, outcome, common))
    outcome = "error" if failed else "ok"
    error = {sc.ERROR_TYPE: "TimeoutError"} if failed else {}
    agent = _span(
        trace_id,
        agent_id,
        root_id,
        "invoke_agent root",
        start,
        total_ms - 1,
        outcome,
        {**common, **error, sc.ADK_SPAN_KIND: "agent"},
    )
    invocation = _span(
        trace_id,
        root_id,
        None,
        f"invocation {shape.app}",
        start,
        total_ms,
        outcome,
        {
            **error,
            sc.ADK_INVOCATION_ID: invocation_id,
            sc.ADK_SPAN_KIND: "invocation",
            sc.ADK_APP_NAME: shape.app,
            sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_WORKFLOW,
            **({sc.GEN_AI_CONVERSATION_ID: f"s-{invocation_id}"} if shape.conversation else {}),
        },
    )
    return [*children, agent, invocation]


def _tool(
    trace_id: str,
    span_id: str,
    parent: str,
    name: str,
    start: int,
    ms: float,
    outcome: str,
    common: dict[str, str],
) -> SpanRecord:
    attributes = {**common, sc.ADK_SPAN_KIND: "tool", sc.GEN_AI_TOOL_NAME: name}
    if outcome == "error":
        attributes[sc.ERROR_TYPE] = "TimeoutError"
    return _span(trace_id, span_id, parent, f"execute_tool {name}", start, ms, outcome, attributes)


def _span(
    trace_id: str,
    span_id: str,
    parent: str | None,
    name: str,
    start: int,
    ms: float,
    outcome: str,
    attributes: dict[str, object],
) -> SpanRecord:
    return SpanRecord(
        trace_id=trace_id,
        span_id=span_id,
        parent_id=parent,
        name=name,
        status_code="ERROR" if outcome == "error" else "OK",
        start_ns=start,
        end_ns=start + int(ms * MS),
        attributes={**attributes, sc.ADK_OUTCOME: outcome},
    )


def _value(value: object) -> dict[str, object]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    return {"stringValue": str(value)}


def otlp_line(records: list[SpanRecord], service: str = "shop") -> str:
    """One collector file-exporter line (OTLP JSON, hex ids) holding the records."""
    spans = []
    for record in records:
        span: dict[str, object] = {
            "traceId": record.trace_id,
            "spanId": record.span_id,
            "name": record.name,
            "kind": 1,
            "startTimeUnixNano": str(record.start_ns),
            "endTimeUnixNano": str(record.end_ns),
            "attributes": [{"key": k, "value": _value(v)} for k, v in record.attributes.items()],
            "status": {"code": 2 if record.status_code == "ERROR" else 1},
        }
        if record.parent_id:
            span["parentSpanId"] = record.parent_id
        spans.append(span)
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": service}}]}
    document = {
        "resourceSpans": [
            {"resource": resource, "scopeSpans": [{"scope": {"name": "adk_otel"}, "spans": spans}]}
        ]
    }
    return json.dumps(document, separators=(",", ":"))


def write_runs(
    path: Path, rng: random.Random, count: int, shape: Shape | list[Shape] = Shape()
) -> Path:
    """``count`` runs as a JSON Lines trace file, 100 spans a line (an export
    batch); ``shape`` a list: one run of each shape (``count`` is ignored)."""
    if isinstance(shape, list):
        records = [record for one in shape for record in one_run(rng, one)]
    else:
        records = runs(rng, count, shape)
    with open(path, "w", encoding="utf-8") as handle:
        for start in range(0, len(records), 100):
            handle.write(otlp_line(records[start : start + 100]) + "\n")
    return path
