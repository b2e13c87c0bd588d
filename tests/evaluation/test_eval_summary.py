"""The reading side of the evaluation gate: case results per metric and per
case, and the cases that flipped from pass to fail between two runs."""

from __future__ import annotations

import pytest

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
    assert match.scores.as_pairs() == [[0.2, 1], [0.9, 1], [1.0, 1]]
    assert match.mean_score == pytest.approx(0.7)
    assert summary["count"].pass_rate is None and summary["count"].mean_score == 3.0


def test_per_case():
    assert {key: s.pass_rate for key, s in by_case(CANDIDATE).items()} == {
        ("a", "count"): None,
        ("a", "match"): 1.0,
        ("b", "match"): 0.0,
        ("c", "match"): 0.0,
    }


def test_flips_name_the_case_and_both_traces():
    assert flips(BASELINE, CANDIDATE) == [
        Flip("b", "match", "b0" * 16, "b1" * 16, baseline_passed=1, candidate_failed=1),
    ]
    assert flips(BASELINE, BASELINE) == []
    assert flips(CANDIDATE, BASELINE) == []  # fail -> pass is no flip to report


def test_a_case_that_already_failed_in_the_baseline_is_no_flip():
    flaky = [*BASELINE, case("b", "match", "fail", 0.5, "b2" * 16)]
    assert flips(flaky, CANDIDATE) == []
    # Several candidate failures: counted, the first failing trace named.
    twice = [*CANDIDATE, case("b", "match", "fail", 0.3, "b3" * 16)]
    (flip,) = flips(BASELINE, twice)
    assert (flip.candidate_failed, flip.candidate_trace_id) == (2, "b1" * 16)


def test_scores_keep_their_digits_and_sign():
    summary = by_metric([case("a", "m", "pass", 0.123456789, "a0" * 16)])
    assert summary["m"].scores.as_pairs() == [[0.123457, 1]]
    negative = by_metric([case("a", "m", None, -2.5, "a0" * 16)])
    assert negative["m"].mean_score == -2.5
