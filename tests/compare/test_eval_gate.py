"""The eval gate's parts: its rules, its score test, its verdicts, what the
reports and the summary file say of it, and how results find their runs."""

from __future__ import annotations

import gzip
import json
import math
import random
from collections import Counter
from pathlib import Path

import jsonschema
import pytest

from adk_otel import semconv as sc
from adk_otel.cli.main import main
from adk_otel.traces.comparisons.compare_report import comparison_json, render_markdown
from adk_otel.traces.comparisons.comparison import EVAL, Rule, compare, parse_rules
from adk_otel.traces.comparisons.eval_summary import CaseTally, MetricSummary
from adk_otel.traces.comparisons.runs import GroupSummary, Summary, summarize
from adk_otel.traces.comparisons.stats import (
    Distribution,
    Scores,
    mean_drop_test,
    mean_test,
    student_t_sf,
)
from adk_otel.traces.comparisons.summary_file import from_json, to_json
from adk_otel.traces.io.evaluations import EvaluationResult
from adk_otel.traces.io.files import iter_records
from adk_otel.traces.io.otlp_json import OtlpJsonError

from .synth import runs, write_runs

DOCS = Path(__file__).parents[2] / "docs"
SCHEMA = json.loads((DOCS / "compare-output.schema.json").read_text())
SUMMARY_SCHEMA = json.loads((DOCS / "summary.schema.json").read_text())
APP = (("adk.app.name", "shop"),)


# -- rules --------------------------------------------------------------------------------


def test_eval_rules_parse_with_their_drops() -> None:
    assert parse_rules(["eval"]) == [Rule(EVAL, 0.0)]
    assert parse_rules(["eval=-5%"]) == [Rule(EVAL, 5.0)]
    assert parse_rules(["eval:response_match_score=-10%", "eval:tool_trajectory_avg_score"]) == [
        Rule(EVAL, 10.0, "response_match_score"),
        Rule(EVAL, 0.0, "tool_trajectory_avg_score"),
    ]
    # A later rule of the same metric replaces the earlier one; `any` is the run gates only.
    assert parse_rules(["eval:m=-1%", "eval:m=-2%"]) == [Rule(EVAL, 2.0, "m")]
    assert EVAL not in {rule.gate for rule in parse_rules(["any"])}
    assert [r.text for r in parse_rules(["eval", "eval:m=-5%", "errors", "tokens"])] == [
        "eval",
        "eval:m=-5%",
        "errors",
        "tokens=+10%",
    ]
    for bad in ("eval:", "tokens:m=+5%", "eval=-x%", "eval=-inf%", "evals"):
        with pytest.raises(OtlpJsonError):
            parse_rules([bad])


# -- the score test -------------------------------------------------------------------------


def test_the_score_drop_test_is_welch_turned_around_and_its_interval_fieller() -> None:
    base = Scores.of([0.9, 0.8, 1.0, 0.7, 0.95, 0.85, 0.9, 0.6])
    cand = Scores.of([0.5, 0.8, 0.4, 0.7, 0.6, 0.9, 0.3, 0.5])
    drop = mean_drop_test(base, cand, margin=0.9, alpha=0.05)
    # By hand: t = (0.9 mb - mc) / sqrt(vc / n + 0.81 vb / n), Welch's df at 0.9.
    n = 8
    mb, mc = 0.8375, 0.5875
    vb = sum((v - mb) ** 2 for v in [0.9, 0.8, 1.0, 0.7, 0.95, 0.85, 0.9, 0.6]) / (n - 1) / n
    vc = sum((v - mc) ** 2 for v in [0.5, 0.8, 0.4, 0.7, 0.6, 0.9, 0.3, 0.5]) / (n - 1) / n
    t = (0.9 * mb - mc) / math.sqrt(vc + 0.81 * vb)
    df = (vc + 0.81 * vb) ** 2 / (vc**2 / (n - 1) + (0.81 * vb) ** 2 / (n - 1))
    assert drop.p_value == pytest.approx(student_t_sf(t, df), rel=1e-9)
    # Student's t upper tail at 1.995 with 11.34 df: 0.03533 (scipy.stats.t.sf).
    assert (round(t, 3), round(df, 2), round(drop.p_value, 4)) == (1.995, 11.34, 0.0353)
    assert drop.low <= mc / mb <= (drop.high or math.inf)
    # Against the same margin, the rising test (tokens') looks the other way.
    rise = mean_test(base, cand, margin=0.9, alpha=0.05)
    assert rise.p_value > 0.9 and drop.p_value < 0.05


@pytest.mark.parametrize("seed", range(20))
def test_the_score_interval_is_the_test_inverted(seed: int) -> None:
    rng = random.Random(seed)
    base = Scores.of(rng.betavariate(5, 2) for _ in range(15))
    cand = Scores.of(rng.betavariate(4, 3) for _ in range(12))
    for margin in (1.0, 0.95, 0.9, 0.8):
        for alpha in (0.05, 0.01):
            result = mean_drop_test(base, cand, margin=margin, alpha=alpha)
            below = result.high is not None and result.high < margin
            assert below == (result.p_value < alpha), (margin, alpha, result)


def test_the_score_test_says_when_it_cannot_judge() -> None:
    few = Scores.of([0.5])
    assert not mean_drop_test(few, Scores.of([0.1, 0.2]), margin=1, alpha=0.05).possible
    zero = Scores.of([0.0, 0.0, 0.0])
    assert not mean_drop_test(zero, Scores.of([0.1, 0.2]), margin=1, alpha=0.05).possible
    # Every score alike on both sides: the ratio is known exactly.
    same = mean_drop_test(Scores.of([1.0] * 5), Scores.of([0.5] * 5), margin=0.9, alpha=0.05)
    assert (same.p_value, same.low, same.high) == (0.0, 0.5, 0.5)


def test_scores_are_kept_as_reported_not_on_the_cost_grid() -> None:
    assert Scores.of([0.4]).as_pairs() == [[0.4, 1]]
    assert Distribution.of([0.4]).as_pairs() != [[0.4, 1]]  # costs: a 1 % log grid
    assert Scores.from_pairs([[-0.5, 2]]).mean() == -0.5
    with pytest.raises(ValueError):
        Scores.from_pairs([[math.nan, 1]])


# -- verdicts -------------------------------------------------------------------------------


def side(**metrics: tuple[int, int, list[float]]) -> Summary:
    """One group; per metric (passed, failed, scores)."""
    runs_ = max(max(p + f, len(scores)) for p, f, scores in metrics.values())
    group = GroupSummary(runs=runs_, outcomes=Counter(ok=runs_))
    for name, (passed, failed, scores) in metrics.items():
        group.evaluations[name] = MetricSummary(passed, failed, scores=Scores.of(scores))
    return Summary(groups={APP: group})


GOOD = side(match=(19, 1, [0.9] * 10 + [1.0] * 9 + [0.2]), steps=(20, 0, [1.0] * 20))
WORSE = side(match=(8, 12, [0.9] * 5 + [0.3] * 12 + [1.0] * 3), steps=(20, 0, [1.0] * 20))


def findings(result, metric: str) -> dict[str, object]:
    return {f.subject.rsplit(" ", 2)[-2]: f for f in result.findings if f.metric == metric}


def test_a_drop_in_pass_rate_and_score_trips_eval() -> None:
    result = compare(GOOD, WORSE, rules=parse_rules(["eval"]))
    assert result.tripped_gates == ["eval"] and result.exit_code == 1
    match = findings(result, "match")
    assert match["pass"].tripped and match["mean"].tripped
    assert match["pass"].effect == pytest.approx(0.4 - 0.95)
    assert match["pass"].interval[1] < 0  # the upper end clears no change
    assert match["mean"].interval[1] < 1
    assert not any(f.tripped for f in findings(result, "steps").values())
    # The other way round is an improvement: never trips.
    assert compare(WORSE, GOOD, rules=parse_rules(["eval"])).tripped == []


def test_a_metrics_threshold_and_an_ungated_metric() -> None:
    # The pass rate fell 55 points, the score by 42 %: under a 60 % threshold neither trips.
    assert compare(GOOD, WORSE, rules=parse_rules(["eval:match=-60%"])).ok
    # Only `steps` asked for: `match` is flagged, not gated.
    result = compare(GOOD, WORSE, rules=parse_rules(["eval:steps"]))
    assert result.ok and {f.subject for f in result.flagged} == {
        "eval match pass rate",
        "eval match mean score",
    }
    # Without --fail-on: shown, never tripped.
    assert compare(GOOD, WORSE).exit_code == 0


def test_eval_without_enough_results_or_without_results_is_inconclusive() -> None:
    few = side(match=(3, 0, [1.0, 1.0, 1.0]))
    result = compare(few, few, rules=parse_rules(["eval"]))
    assert result.exit_code == 3 and result.inconclusive_gates == ["eval"]
    assert result.inconclusive_metrics == ["match"] and result.runs_needed == {"eval": 5}
    assert "sample too small (needs 5 case results a side)" in result.findings[-1].why
    bare = Summary(groups={APP: GroupSummary(runs=10, outcomes=Counter(ok=10))})
    result = compare(bare, bare, rules=parse_rules(["eval"]))
    assert result.exit_code == 3 and result.inconclusive_metrics == ["(any)"]
    # A metric asked for by name that no side has: inconclusive, not passed.
    result = compare(GOOD, GOOD, rules=parse_rules(["eval:typo"]))
    assert result.exit_code == 3 and result.inconclusive_metrics == ["typo"]
    # The candidate lost a metric's verdicts: said, and the metric is not judged.
    lost = side(steps=(20, 0, [1.0] * 20))
    result = compare(GOOD, lost, rules=parse_rules(["eval"]))
    assert result.exit_code == 3 and result.inconclusive_metrics == ["match"]


def test_informational_metrics_are_shown_never_judged() -> None:
    # No pass or fail, only a value (ADK's token counts): no direction to judge.
    b = side(tokens=(0, 0, [100.0] * 20))
    c = side(tokens=(0, 0, [10.0] * 20))
    for summary in (b, c):
        summary.groups[APP].evaluations["tokens"].other = 20
    result = compare(b, c, rules=parse_rules(["eval:m"]))
    assert not [f for f in result.findings if f.gate == EVAL]
    (row,) = result.groups[0].evaluations
    assert row.metric == "tokens" and row.candidate and row.candidate.mean_score == 10.0


# -- reports and flips ------------------------------------------------------------------


def with_cases(summary: Summary, **cases: tuple[int, int, str | None]) -> Summary:
    for case, (passed, failed, trace) in cases.items():
        summary.eval_cases[(case, "match")] = CaseTally(
            passed, failed, "set", trace if passed else None, trace if failed else None
        )
    return summary


def test_reports_list_the_flips_with_both_traces() -> None:
    base = with_cases(side(**{"match": (19, 1, [1.0] * 20)}), a=(10, 0, "a0" * 16), b=(9, 1, None))
    cand = with_cases(side(**{"match": (8, 12, [0.3] * 20)}), a=(4, 6, "a1" * 16), b=(4, 6, "b1"))
    result = compare(base, cand, rules=parse_rules(["eval"]))
    (flip,) = result.flips  # b failed in the baseline already: no flip
    assert (flip.eval_case_id, flip.baseline_trace_id, flip.candidate_trace_id) == (
        "a",
        "a0" * 16,
        "a1" * 16,
    )
    text = render_markdown(result)
    assert f"| a | match | 10/10 pass | 6/10 fail | `{'a0' * 16}` | `{'a1' * 16}` |" in text
    document = comparison_json(result)
    jsonschema.validate(document, SCHEMA)
    assert document["version"] == 3 and document["flips"][0]["candidate_failed"] == 6
    assert document["rules"] == [{"gate": "eval", "threshold_percent": 0.0, "metric": None}]
    (group,) = document["groups"]
    assert [row["metric"] for row in group["evaluations"]] == ["match"]
    assert group["evaluations"][0]["candidate"]["pass_rate"] == 0.4


# -- results find their runs -----------------------------------------------------------


def result_for(invocation, metric: str, label: str, score: float, case: str) -> EvaluationResult:
    return EvaluationResult(
        trace_id=invocation.trace_id,
        span_id=invocation.span_id,
        name=metric,
        score=score,
        label=label,
        scope="case",
        eval_case_id=case,
    )


def test_results_count_in_the_group_of_the_run_they_judge() -> None:
    records = runs(random.Random(21), 12)
    invocations = [r for r in records if r.name == "invocation shop"]
    results = [
        result_for(inv, "match", "pass" if i % 3 else "fail", i / 10, f"c{i}")
        for i, inv in enumerate(invocations)
    ]
    orphan = EvaluationResult(None, None, "match", 0.5, "pass", scope="case", eval_case_id="x")
    per_invocation = EvaluationResult(
        invocations[0].trace_id, invocations[0].span_id, "match", 1.0, "pass", scope="invocation"
    )
    summary = summarize(records, evaluations=[*results, orphan, per_invocation], in_order=True)
    (group,) = summary.groups.values()
    match = group.evaluations["match"]
    assert (match.passed, match.failed, match.results) == (8, 4, 12)
    assert summary.unattached_evaluations == 1  # the one without a span context
    assert summary.eval_cases[("c1", "match")].pass_trace_id == invocations[1].trace_id

    # The summary file keeps the counts and scores, not the ids, and matches its schema.
    document = to_json(summary)
    jsonschema.validate(document, SUMMARY_SCHEMA)
    again = from_json(json.loads(json.dumps(document)))
    (kept,) = again.groups.values()
    assert kept.evaluations["match"].scores.counts == match.scores.counts
    assert again.eval_cases[("c1", "match")] == CaseTally(passed=1)
    document["groups"][0]["evaluations"][0]["scores"] = [[0.5, 0]]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, SUMMARY_SCHEMA)


def test_the_span_form_is_read_from_the_stream(tmp_path: Path, capsys) -> None:
    from dataclasses import replace

    from adk_otel.traces.io.model import SpanEvent

    records = runs(random.Random(22), 6)
    invocations = [r for r in records if r.name == "invocation shop"]
    evaluate = [
        replace(
            inv,
            span_id=f"{i + 1:016x}",
            parent_id=inv.span_id,
            name="evaluate c",
            attributes={sc.ADK_EVAL_CASE_ID: f"c{i}"},
            events=(
                SpanEvent(
                    sc.GEN_AI_EVALUATION_RESULT_EVENT,
                    inv.end_ns or 0,
                    {
                        sc.GEN_AI_EVALUATION_NAME: "match",
                        sc.GEN_AI_EVALUATION_SCORE_VALUE: 0.75,
                        sc.GEN_AI_EVALUATION_SCORE_LABEL: "pass",
                        sc.ADK_EVAL_SCOPE: "case",
                    },
                ),
            ),
        )
        for i, inv in enumerate(invocations)
    ]
    summary = summarize([*records, *evaluate], in_order=True)
    (group,) = summary.groups.values()
    assert group.evaluations["match"].passed == 6
    assert group.evaluations["match"].mean_score == 0.75


def test_summarize_shows_each_metric_in_every_format(tmp_path: Path, capsys) -> None:
    traces = tmp_path / "traces.jsonl"
    write_runs(traces, random.Random(23), 10)
    invocations = [r for r in iter_records([str(traces)]) if r.name == "invocation shop"]
    records = [
        {
            "traceId": inv.trace_id,
            "spanId": inv.span_id,
            "eventName": sc.GEN_AI_EVALUATION_RESULT_EVENT,
            "attributes": [
                {"key": sc.GEN_AI_EVALUATION_NAME, "value": {"stringValue": "match"}},
                {"key": sc.GEN_AI_EVALUATION_SCORE_VALUE, "value": {"doubleValue": i / 10}},
                {
                    "key": sc.GEN_AI_EVALUATION_SCORE_LABEL,
                    "value": {"stringValue": "pass" if i >= 3 else "fail"},
                },
                {"key": sc.ADK_EVAL_SCOPE, "value": {"stringValue": "case"}},
                {"key": sc.ADK_EVAL_CASE_ID, "value": {"stringValue": f"c{i}"}},
            ],
        }
        for i, inv in enumerate(invocations)
    ]
    logs = {"resourceLogs": [{"scopeLogs": [{"logRecords": records}]}]}
    with gzip.open(tmp_path / "logs.json.gz", "wt") as handle:  # gzipped, as users keep them
        handle.write(json.dumps(logs) + "\n")

    assert main(["summarize", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert text.startswith("adk-otel summarize: 10 runs in 1 group(s) from ")
    rows = [line.split() for line in text.splitlines()]
    assert ["shop", "match", "10", "7", "3", "70.0%", "0.45"] in rows, text
    assert main(["summarize", str(tmp_path), "--format", "markdown"]) == 0
    assert "| shop | match | 10 | 7 | 3 | 70.0% | 0.45 |" in capsys.readouterr().out
    out = tmp_path / "out.summary.json"
    assert main(["summarize", str(tmp_path), "--format", "json", "-o", str(out)]) == 0
    document = json.loads(capsys.readouterr().out)
    (group,) = document["groups"]
    assert document["output"] == str(out) and document["unattached_evaluations"] == 0
    assert group["evaluations"] == [
        {
            "metric": "match",
            "results": 10,
            "passed": 7,
            "failed": 3,
            "other": 0,
            "pass_rate": 0.7,
            "scored": 10,
            "mean_score": 0.45,
        }
    ]
    jsonschema.validate(json.loads(out.read_text()), SUMMARY_SCHEMA)
