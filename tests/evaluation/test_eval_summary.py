"""The reading side of the evaluation gate: case results per metric and per
case, and the cases that flipped from pass to fail between two runs."""

from __future__ import annotations

from adk_otel.traces.comparisons.eval_summary import Flip, by_case, by_metric, flips
from adk_otel.traces.io.evaluations import EvaluationResult


def case(
    case_id: str, metric: str, label: str | None, score: float | None, trace: str
) -> EvaluationResult:
    return EvaluationResult(
        trace_id=trace,
        span_id="1" * 16,
        name=metric,
        score=score,
        label=label,
        scope="case",
        eval_case_id=case_id,
    )


BASELINE = [
    case("a", "match", "pass", 0.9, "a0" * 16),
    case("b", "match", "pass", 1.0, "b0" * 16),
    case("c", "match", "fail", 0.2, "c0" * 16),
    case("a", "count", None, 3.0, "a0" * 16),
    EvaluationResult("a0" * 16, "2" * 16, "match", 0.9, "pass", scope="invocation"),
]
CANDIDATE = [
    case("a", "match", "pass", 0.95, "a1" * 16),
    case("b", "match", "fail", 0.4, "b1" * 16),
    case("c", "match", "fail", 0.1, "c1" * 16),
    case("a", "count", None, 4.0, "a1" * 16),
]


def test_per_metric_pass_rate_and_scores_from_case_results_only():
    summary = by_metric(BASELINE)
    assert list(summary) == ["count", "match"]
    match = summary["match"]
    assert (match.passed, match.failed, match.other) == (2, 1, 0)
    assert match.pass_rate == 2 / 3
    assert match.scores == [0.9, 1.0, 0.2]
    assert summary["count"].pass_rate is None and summary["count"].scores == [3.0]


def test_per_case():
    assert {key: s.pass_rate for key, s in by_case(CANDIDATE).items()} == {
        ("a", "count"): None,
        ("a", "match"): 1.0,
        ("b", "match"): 0.0,
        ("c", "match"): 0.0,
    }


def test_flips_name_the_case_and_both_traces():
    assert flips(BASELINE, CANDIDATE) == [
        Flip("b", "match", "b0" * 16, "b1" * 16, 1.0, 0.4),
    ]
    assert flips(BASELINE, BASELINE) == []
    assert flips(CANDIDATE, BASELINE) == []  # fail -> pass is no flip to report
