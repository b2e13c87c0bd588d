"""A run's figures, declared once (comparisons/figures.py), computed over files by Python and
in a store by the SQL written from the same declaration: one table of runs, each with the
figures it must have, checked on both paths (files, and the real chDB engine)."""

from __future__ import annotations

from pathlib import Path

from adk_otel import semconv as sc
from adk_otel.traces.comparisons.figures import FIGURES
from adk_otel.traces.comparisons.runs import GroupSummary, Summary, summarize
from adk_otel.traces.io.model import SpanRecord
from adk_otel.traces.store import engine, spans
from adk_otel.traces.store.runs import summarize_store
from adk_otel.traces.store.selection import Selection

MS = 1_000_000
IN, OUT = sc.GEN_AI_USAGE_INPUT_TOKENS, sc.GEN_AI_USAGE_OUTPUT_TOKENS
ADK_IN, ADK_OUT = sc.ADK_USAGE_INPUT_TOKENS, sc.ADK_USAGE_OUTPUT_TOKENS

Step = tuple[str, dict[str, object]]
"""A step span of the run: its kind and attributes."""

# app name: (invocation span's ms, its steps, the figures it must have)
RUNS: dict[str, tuple[int, list[Step], dict[str, float]]] = {
    "plain": (
        40,
        [("agent", {}), ("model", {IN: 10, OUT: 3}), ("tool", {}), ("model", {IN: 12, OUT: 4})],
        {
            "latency_ms": 40,
            "input_tokens": 22,
            "output_tokens": 7,
            "tokens": 29,
            "model_calls": 2,
            "tool_calls": 1,
        },
    ),
    # A client instrumentation records the inference: the model span carries adk.usage.*.
    "client-recorded": (
        7,
        [("agent", {}), ("model", {ADK_IN: 30, ADK_OUT: 5}), ("model", {IN: 1, OUT: 1})],
        {
            "latency_ms": 7,
            "input_tokens": 31,
            "output_tokens": 6,
            "tokens": 37,
            "model_calls": 2,
            "tool_calls": 0,
        },
    ),
    # Both present: gen_ai.usage.* is read, adk.usage.* not added to it.
    "both-keys": (
        90,
        [("model", {IN: 8, ADK_IN: 80, OUT: 2, ADK_OUT: 20})],
        {
            "latency_ms": 90,
            "input_tokens": 8,
            "output_tokens": 2,
            "tokens": 10,
            "model_calls": 1,
            "tool_calls": 0,
        },
    ),
    # Usage on a tool or node span is not a model call's: not counted.
    "usage-elsewhere": (
        120,
        [("tool", {IN: 50}), ("node", {OUT: 9}), ("tool", {}), ("tool", {})],
        {
            "latency_ms": 120,
            "input_tokens": 0,
            "output_tokens": 0,
            "tokens": 0,
            "model_calls": 0,
            "tool_calls": 3,
        },
    ),
    "no-steps": (
        3,
        [],
        {
            "latency_ms": 3,
            "input_tokens": 0,
            "output_tokens": 0,
            "tokens": 0,
            "model_calls": 0,
            "tool_calls": 0,
        },
    ),
}


def records() -> list[SpanRecord]:
    out: list[SpanRecord] = []
    for number, (app, (ms, steps, _)) in enumerate(RUNS.items(), 1):
        trace, invocation = f"{number:032x}", f"e-{app}"
        start = 1_765_000_000_000 * MS + number * 1000 * MS
        for index, (kind, attributes) in enumerate(steps, 1):
            out.append(
                SpanRecord(
                    trace_id=trace,
                    span_id=f"{number:08x}{index:08x}",
                    parent_id=f"{number:016x}",
                    name=f"{kind} step{index}",
                    status_code="OK",
                    start_ns=start + index * MS,
                    end_ns=start + (index + 1) * MS,
                    attributes={
                        **attributes,
                        sc.ADK_SPAN_KIND: kind,
                        sc.ADK_INVOCATION_ID: invocation,
                        sc.ADK_OUTCOME: "ok",
                    },
                )
            )
        out.append(
            SpanRecord(
                trace_id=trace,
                span_id=f"{number:016x}",
                parent_id=None,
                name=f"invocation {app}",
                status_code="OK",
                start_ns=start,
                end_ns=start + ms * MS,
                attributes={
                    sc.ADK_SPAN_KIND: "invocation",
                    sc.GEN_AI_OPERATION_NAME: "invoke_workflow",
                    sc.ADK_APP_NAME: app,
                    sc.ADK_INVOCATION_ID: invocation,
                    sc.ADK_OUTCOME: "ok",
                },
            )
        )
    return out


def figures_of(summary: Summary, app: str) -> dict[str, float]:
    """The one run's figures of ``app``'s group."""
    group: GroupSummary = summary.groups[(("adk.app.name", app),)]
    assert group.runs == 1
    found = {}
    for figure in FIGURES:
        pairs = getattr(group, figure.name).as_pairs()
        assert len(pairs) == 1 and pairs[0][1] == 1, (app, figure.name, pairs)
        found[figure.name] = pairs[0][0]
    return found


def test_every_figure_is_the_same_over_files_and_in_a_store(tmp_path: Path) -> None:
    every = {figure.name for figure in FIGURES}
    for app, (_, _, expected) in RUNS.items():
        assert set(expected) == every, f"{app}: the table must give every figure"
    spans_read = records()
    from_files = summarize(spans_read)
    with engine.open_store(f"chdb:{tmp_path / 'store'}", create=True) as opened:
        assert spans.load(opened, spans_read) == len(spans_read)
        from_store = summarize_store(opened, Selection())
    assert from_files.runs == from_store.runs == len(RUNS)
    for app, (_, _, expected) in RUNS.items():
        assert figures_of(from_files, app) == expected, f"files, {app}"
        assert figures_of(from_store, app) == expected, f"store, {app}"
