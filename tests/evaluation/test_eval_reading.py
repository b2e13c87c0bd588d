"""Scores read back: ``adk-otel tree`` prints each run's scores under its
invocation line, from a collector's OTLP JSON files (log records beside the
spans) or from the span form; the pytest query API selects them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor

from adk_otel import semconv as sc
from adk_otel.cli import main
from adk_otel.evaluations import TracedLocalEvalService
from adk_otel.testing.capture import TraceCapture
from adk_otel.testing.receiver import OtlpReceiver
from adk_otel.traces.io import evaluations as reading

from . import evalkit as kit
from .test_eval_traces import infer_and_score

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

CASES = {"greeting": kit.STANDARD["greeting"], "expects-in-stock": kit.STANDARD["expects-in-stock"]}


async def scored(capture: TraceCapture, **options: Any) -> list[Any]:
    options.setdefault("logger_provider", capture.logger_provider)
    import adk_otel

    root = kit.agent()
    plugin = adk_otel.AdkOtelPlugin(tracer_provider=capture.tracer_provider)
    service = TracedLocalEvalService(
        root,
        kit.eval_set(CASES),
        tracer_provider=capture.tracer_provider,
        **kit.app_with(plugin, root),
        **options,
    )
    return await infer_and_score(service, kit.local_metrics())


async def test_tree_prints_scores_under_their_invocation(capsys, tmp_path: Path):
    capture = TraceCapture()
    with OtlpReceiver() as receiver:
        logs = LoggerProvider()
        base = receiver.http_endpoint.rsplit("/v1/", 1)[0]
        exporter = OTLPLogExporter(endpoint=f"{base}/v1/logs")
        logs.add_log_record_processor(SimpleLogRecordProcessor(exporter))
        results = await scored(capture, logger_provider=logs)
        logs.shutdown()
        log_file = tmp_path / "logs.jsonl"
        log_file.write_text(kit.collector_logs(receiver.log_requests), encoding="utf-8")
    spans = capture.save(tmp_path / "spans.jsonl")

    code = main(["tree", str(spans), str(log_file), "--no-color"])
    out = capsys.readouterr().out
    if not kit.APP_PLUGINS_IN_EVAL:
        assert code != 0 and not out  # ADK 2.5: no traced run, no tree to draw
        return
    assert code == 0
    score_lines = [
        "score " + line.split("score ", 1)[1] for line in out.splitlines() if "score " in line
    ]
    expected = sum(
        len(p.eval_metric_results) for r in results for p in r.eval_metric_result_per_invocation
    ) + sum(len(r.overall_eval_metric_results) for r in results)
    assert len(score_lines) == expected
    assert "score response_match_score 0.4 fail (case of expects-in-stock)" in score_lines
    assert "score tool_trajectory_avg_score 1 pass (invocation 0 of greeting)" in score_lines
    # Under the invocation line of its own trace, before the next trace.
    lines = out.splitlines()
    at = lines.index(next(line for line in lines if "(invocation 0 of greeting)" in line))
    above = [line for line in lines[:at] if "invocation EvaluationGenerator" in line][-1]
    [greeting] = [s for s in capture.spans if s.attributes.get(sc.ADK_EVAL_CASE_ID) == "greeting"]
    trace_id = greeting.trace_id
    header = [line for line in lines[:at] if line.startswith("trace ")][-1]
    assert header.split()[1] == trace_id and above


async def test_tree_prints_the_span_form_too(capsys, tmp_path: Path):
    capture = TraceCapture()
    await scored(capture, as_spans=True)
    spans = capture.save(tmp_path / "spans.jsonl")
    assert main(["tree", str(spans), "--no-color"]) == 0
    out = capsys.readouterr().out
    assert "evaluate greeting" in out
    assert sum("score " in line for line in out.splitlines()) == 2 * 2 + 2 * 2


async def test_the_query_api_selects_scores_by_run_metric_and_label():
    capture = TraceCapture()
    await scored(capture)
    q = capture.query()
    assert len(q.evaluations()) == 8
    failed = q.evaluations(label="fail", scope="case")
    assert [(e.eval_case_id, e.name) for e in failed] == [
        ("expects-in-stock", "response_match_score")
    ]
    if not kit.APP_PLUGINS_IN_EVAL:
        assert not q.invocation().all()
        return
    judged = q.invocation().attr(sc.ADK_EVAL_CASE_ID, "greeting").evaluations()
    assert {(e.name, e.scope) for e in judged} == {
        (m, s)
        for m in ("tool_trajectory_avg_score", "response_match_score")
        for s in ("invocation", "case")
    }
    assert q.tool("lookup").evaluations() == []
    assert "score response_match_score" in capture.tree()


def test_reading_skips_what_is_not_an_evaluation_result(tmp_path: Path):
    junk = tmp_path / "junk.jsonl"
    junk.write_text(
        '{"resourceLogs": [{"scopeLogs": [{"logRecords": [{"eventName": "other"}, 7, '
        '{"eventName": "gen_ai.evaluation.result", "traceId": "zz", '
        '"attributes": [{"key": 1}]}]}]}]}\n'
        "not json resourceLogs\n",
        encoding="utf-8",
    )
    [result] = reading.read_files([str(junk), str(tmp_path / "missing.jsonl")])
    assert (result.trace_id, result.span_id, result.name) == (None, None, "?")
