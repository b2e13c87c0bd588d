"""``--fail-on eval`` over real eval runs: ADK's LocalEvalService (through
adk-otel's ``TracedLocalEvalService``) runs an eval set over a scripted-model
agent, offline; the spans and the ``gen_ai.evaluation.result`` log records are
written as a collector's file exporter writes them (OTLP JSON lines, logs
beside spans), and ``adk-otel summarize`` / ``compare`` read them back.

A candidate agent that answers worse trips the gate, on the pass rate and on
the mean score, and the report names the cases that flipped with the trace of
each side; two runs of the same agent do not trip it."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import jsonschema
import pytest
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs

import adk_otel
from adk_otel import semconv as sc
from adk_otel.cli.main import main
from adk_otel.evaluations import TracedLocalEvalService
from adk_otel.testing.capture import TraceCapture
from adk_otel.traces.io.files import iter_records

from . import evalkit as kit
from .test_eval_traces import infer_and_score

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

SCHEMA = json.loads((Path(__file__).parents[2] / "docs" / "compare-output.schema.json").read_text())

CASES = {
    # eight cases the agent answers right (both metrics pass) ...
    **{f"sku-{n}": [kit.turn("sku A1", "in stock", ["lookup"])] for n in range(8)},
    # ... and one it answers wrong on every side (response match fails: no flip)
    "expects-in-stock": kit.STANDARD["expects-in-stock"],
}
MATCH = "response_match_score"


async def _eval_run(folder: Path, turns: kit.Turns) -> None:
    """One real eval run of ``CASES``: spans and log records to ``folder``."""
    capture = TraceCapture()
    root = kit.agent(turns)
    plugin = adk_otel.AdkOtelPlugin(tracer_provider=capture.tracer_provider)
    service = TracedLocalEvalService(
        root,
        kit.eval_set(CASES),
        **kit.app_with(plugin, root),
        tracer_provider=capture.tracer_provider,
        logger_provider=capture.logger_provider,
    )
    await infer_and_score(service, kit.local_metrics(), parallelism=2)
    folder.mkdir()
    capture.save(folder / "traces.json")
    (folder / "logs.json").write_text(
        kit.collector_logs([encode_logs(capture.log_exporter.get_finished_logs())]),
        encoding="utf-8",
    )


@pytest.fixture(scope="module")
def eval_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("evals")
    runs = {"baseline": kit.Turns(), "again": kit.Turns(), "careless": kit.Careless()}
    for name, turns in runs.items():
        asyncio.run(_eval_run(root / name, turns))
    return {name: root / name for name in runs}


def _compare(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    """Exit code and stdout; stderr is kept for the caller's next readouterr."""
    code = main(["compare", *argv])
    captured = capsys.readouterr()
    sys.stderr.write(captured.err)
    return code, captured.out


def _row(report: str, subject: str) -> list[str]:
    """The cells after ``subject`` in its row of the text report's table."""
    (line,) = [line for line in report.splitlines() if line.strip().startswith(subject + " ")]
    return line.strip()[len(subject) :].split()


def _trace_cases(folder: Path) -> dict[str, str]:
    """Each invocation's trace id -> its eval case id, from the span file."""
    return {
        record.trace_id: str(record.attributes[sc.ADK_EVAL_CASE_ID])
        for record in iter_records([str(folder / "traces.json")])
        if record.name.startswith("invocation ")
    }


def test_a_careless_candidate_trips_eval_and_names_the_flipped_cases(eval_runs, capsys) -> None:
    baseline, careless = str(eval_runs["baseline"]), str(eval_runs["careless"])
    code, out = _compare(capsys, baseline, careless, "--fail-on", "eval")
    if not kit.APP_PLUGINS_IN_EVAL:
        # ADK 2.5 runs no App plugin in an eval: no traced run to judge.
        assert code == 2 and not out
        assert "logs only, no traces" in capsys.readouterr().err
        return
    assert code == 1, out
    assert out.startswith("adk-otel compare: REGRESSION (tripped: eval)")
    assert f"TRIPPED eval: EvaluationGenerator: eval {MATCH} pass rate 88.9% -> 0.0%" in out
    assert f"TRIPPED eval: EvaluationGenerator: eval {MATCH} mean score" in out
    # The trajectory is the same (the tool is still called): not worse.
    assert _row(out, "eval tool_trajectory_avg_score pass rate")[:2] == ["100.0%", "100.0%"]
    assert _row(out, "eval tool_trajectory_avg_score pass rate")[-2:] == ["not", "worse"]
    assert "eval cases flipped from pass to fail: 8" in out

    document = json.loads(_compare(capsys, baseline, careless, "--fail-on", "eval", "--format",
                                   "json")[1])  # fmt: skip
    jsonschema.validate(document, SCHEMA)
    assert document["tripped_gates"] == ["eval"]
    assert {f["subject"] for f in document["tripped"]} == {
        f"eval {MATCH} pass rate",
        f"eval {MATCH} mean score",
    }
    flips = document["flips"]
    assert {f["eval_case_id"] for f in flips} == {f"sku-{n}" for n in range(8)}
    assert {f["metric"] for f in flips} == {MATCH}
    # Both trace ids are real traces of that case, one a side: read the two at once.
    base_traces, cand_traces = (
        _trace_cases(eval_runs["baseline"]),
        _trace_cases(eval_runs["careless"]),
    )
    for flip in flips:
        assert base_traces[flip["baseline_trace_id"]] == flip["eval_case_id"]
        assert cand_traces[flip["candidate_trace_id"]] == flip["eval_case_id"]
    markdown = _compare(capsys, baseline, careless, "--fail-on", "eval", "--format", "markdown")[1]
    (first,) = [f for f in flips if f["eval_case_id"] == "sku-0"]
    assert (
        f"| sku-0 | {MATCH} | 1/1 pass | 1/1 fail | `{first['baseline_trace_id']}` | "
        f"`{first['candidate_trace_id']}` |"
    ) in markdown


def test_two_runs_of_the_same_agent_do_not_trip_eval(eval_runs, capsys) -> None:
    code, out = _compare(
        capsys, str(eval_runs["baseline"]), str(eval_runs["again"]), "--fail-on", "eval"
    )
    if not kit.APP_PLUGINS_IN_EVAL:
        assert code == 2
        return
    assert code == 0, out
    assert out.startswith("adk-otel compare: OK (no gate tripped)")
    assert "flipped" not in out
    # Judged, not passed for lack of results: 9 case results a side per metric.
    assert _row(out, f"eval {MATCH} pass rate")[:2] == ["88.9%", "88.9%"]
    assert _row(out, f"eval {MATCH} mean score")[-2:] == ["not", "worse"]


def test_per_case_groups_are_judged_pooled_and_a_summary_stands_for_its_traces(
    eval_runs, tmp_path, capsys
) -> None:
    summary = tmp_path / "baseline.summary.json"
    by_case = ["--group-by", sc.ADK_EVAL_CASE_ID]
    code = main(["summarize", str(eval_runs["baseline"]), "-o", str(summary), *by_case])
    out = capsys.readouterr().out
    if not kit.APP_PLUGINS_IN_EVAL:
        assert code == 2
        return
    assert code == 0
    # summarize shows each case's metrics
    assert f"EvaluationGenerator, {sc.ADK_EVAL_CASE_ID}=expects-in-stock  {MATCH}" in out
    code, out = _compare(
        capsys, str(summary), str(eval_runs["careless"]), "--fail-on", f"eval:{MATCH}=-50%"
    )
    # One case result per case and side: too few in each group, judged pooled.
    assert code == 1, out
    assert "every group too small for" in out and "== all runs, pooled" in out
    assert "TRIPPED eval: all runs, pooled: eval response_match_score" in out
    # The summary keeps no trace ids: the flips name the candidate's only.
    assert "eval cases flipped from pass to fail: 8" in out
    # Only the metric asked for is gated (the trajectory did not move anyway).
    code, out = _compare(
        capsys, str(summary), str(eval_runs["again"]), "--fail-on", f"eval:{MATCH}=-50%"
    )
    assert code == 0, out


def test_eval_asked_of_runs_without_results_is_inconclusive(eval_runs, tmp_path, capsys) -> None:
    if not kit.APP_PLUGINS_IN_EVAL:
        return  # nothing traced on ADK 2.5 (the tests above check it)
    bare = tmp_path / "spans-only"
    bare.mkdir()
    (bare / "traces.json").write_bytes((eval_runs["baseline"] / "traces.json").read_bytes())
    code, out = _compare(capsys, str(bare), str(bare), "--fail-on", "eval")
    assert code == 3, out
    assert out.startswith(
        "adk-otel compare: INCONCLUSIVE (too few runs to judge: eval found no case result "
        "with a pass or fail)"
    )
