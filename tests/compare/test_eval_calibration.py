"""The eval gate's calibration, measured as the other gates' is
(test_calibration.py): false alarms on pairs of one score distribution, at
the threshold, over several metrics at once; power on seeded regressions;
and the one-sided symmetry. Scores are bounded (skewed and U-shaped beta, a
mixture with atoms at 0 and 1, 0/1 verdict scores, rubric fractions) or
heavy-tailed (log-normal); a case passes when its score reaches the metric's
threshold, as ADK decides. docs/compare.md quotes the same functions over
more pairs."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adk_otel.traces.comparisons.comparison import compare, parse_rules
from adk_otel.traces.comparisons.eval_summary import MetricSummary
from adk_otel.traces.comparisons.runs import GroupSummary, Summary
from adk_otel.traces.comparisons.stats import fisher_one_sided, mean_drop_test

from .calibration import (
    ALPHA,
    BROKEN,
    EVAL_STRICT,
    SCORES,
    eval_side,
    eval_trip_rates,
    regressed,
)

PAIRS = 500


def alarm_bound(pairs: int) -> float:
    """Alpha plus two standard errors of a rate measured over ``pairs``."""
    return ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / pairs)


@pytest.mark.parametrize("family", SCORES)
def test_eval_does_not_alarm_above_alpha_on_one_score_distribution(family: str) -> None:
    rates = eval_trip_rates(seed=611, pairs=PAIRS, family=family)  # threshold 0
    assert rates["eval"] <= alarm_bound(PAIRS), rates


@pytest.mark.parametrize("family", SCORES)
def test_ten_results_a_side_hold_alpha_too(family: str) -> None:
    # Per-case groups of a few repetitions: Welch's test on 10 bounded or
    # 0/1 scores, Fisher's on 10 verdicts.
    rates = eval_trip_rates(seed=612, pairs=PAIRS, family=family, results=10)
    assert rates["eval"] <= alarm_bound(PAIRS), rates


@pytest.mark.parametrize("family", SCORES)
def test_a_score_drop_exactly_at_the_threshold_alarms_at_most_alpha(family: str) -> None:
    # Every candidate score x0.9 under eval=-10%: the mean score's null, at its
    # boundary (verdicts drawn alike on both sides, whatever the scores).
    rates = eval_trip_rates(
        seed=613,
        pairs=PAIRS,
        family=family,
        rules=parse_rules(["eval=-10%"]),
        score=lambda rng, value: value * 0.9,
        verdicts=0.7,
    )
    assert rates["eval"] <= alarm_bound(PAIRS), rates


def test_three_metrics_at_once_hold_alpha_for_the_gate() -> None:
    # Six tests (a pass rate and a mean score each), one Bonferroni family.
    rates = eval_trip_rates(seed=614, pairs=PAIRS, family="atoms at 0 and 1 + beta(2,2)", metrics=3)
    assert rates["eval"] <= alarm_bound(PAIRS), rates


POWER = {
    # family: the least share of 100 pairs (40 results a side) the gate must trip
    # on a seeded regression, 30 % of the candidate's cases scoring low
    # (docs/compare.md has the rates over 500 pairs; these floors sit below
    # them by the noise of 100 pairs)
    "beta(5,2)": 0.7,
    "U-shaped beta(0.5,0.5)": 0.15,
    "atoms at 0 and 1 + beta(2,2)": 0.3,
    "pass/fail 0 or 1 (p 0.8)": 0.5,
    "rubric thirds": 0.3,
    "log-normal (sigma 1)": 0.12,
}


@pytest.mark.parametrize("family", SCORES)
def test_a_seeded_score_regression_trips_eval(family: str) -> None:
    rates = eval_trip_rates(
        seed=615, pairs=100, family=family, score=regressed(0.3, BROKEN[family])
    )
    assert rates["eval"] >= POWER[family], rates


def test_a_large_regression_is_called_at_200_results() -> None:
    rates = eval_trip_rates(
        seed=616,
        pairs=50,
        family="atoms at 0 and 1 + beta(2,2)",
        results=200,
        score=regressed(0.3, BROKEN["atoms at 0 and 1 + beta(2,2)"]),
    )
    assert rates["eval"] >= 0.9 and rates["pass"] >= 0.8 and rates["mean"] >= 0.9, rates


def test_the_harness_catches_a_gate_without_its_correction() -> None:
    # The same six tests of three metrics, each at alpha (no Bonferroni): the
    # gate then alarms well above alpha, and the bound used above says so.
    rng = random.Random(617)
    alarms, pairs = 0, PAIRS
    family = "atoms at 0 and 1 + beta(2,2)"
    for _ in range(pairs):
        base = eval_side(rng, family, metrics=3).groups
        cand = eval_side(rng, family, metrics=3).groups
        (b,), (c,) = base.values(), cand.values()
        rejected = False
        for name, mb in b.evaluations.items():
            mc = c.evaluations[name]
            rejected |= fisher_one_sided(mb.failed, mb.judged, mc.failed, mc.judged) < ALPHA
            rejected |= mean_drop_test(mb.scores, mc.scores, margin=1, alpha=ALPHA).p_value < ALPHA
        alarms += rejected
    assert alarms / pairs > alarm_bound(pairs)


# -- symmetry and agreement, for any two sets of results --------------------------------


@st.composite
def eval_sides(draw: st.DrawFn) -> Summary:
    results = draw(st.integers(min_value=5, max_value=30))
    scores = draw(
        st.lists(
            st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]) | st.floats(min_value=0, max_value=1),
            min_size=results,
            max_size=results,
        )
    )
    metric = MetricSummary()
    for score in scores:
        metric.scores.add(score)
        metric.passed += score >= 0.5
        metric.failed += score < 0.5
    group = GroupSummary(runs=results, outcomes=Counter(ok=results))
    group.evaluations = {"m": metric}
    return Summary(groups={(("adk.app.name", "shop"),): group})


@settings(max_examples=150, deadline=None)
@given(a=eval_sides(), b=eval_sides())
def test_at_most_one_direction_trips_eval_and_every_trip_tells_one_story(a, b) -> None:
    forward = compare(a, b, alpha=ALPHA, rules=EVAL_STRICT)
    backward = compare(b, a, alpha=ALPHA, rules=EVAL_STRICT)
    # Per test: the pass rate and the mean score may move apart (fewer passes,
    # higher scores), each then trips its own way.
    assert not {f.subject for f in forward.tripped} & {f.subject for f in backward.tripped}
    for result in (forward, backward):
        for finding in result.tripped:
            # lower is worse: the effect and the interval's upper end below no change
            assert finding.interval is not None and finding.effect is not None
            low, high = finding.interval
            no_change = 1.0 if finding.ratio else 0.0
            assert finding.worse and high is not None and high < no_change
            assert finding.effect < no_change and low <= finding.effect <= high
            assert finding.p_value is not None and finding.p_value < ALPHA


@settings(max_examples=100, deadline=None)
@given(a=eval_sides(), factor=st.floats(min_value=1.0, max_value=3.0))
def test_higher_scores_never_trip_eval(a, factor) -> None:
    (group,) = a.groups.values()
    metric = group.evaluations["m"]
    better = MetricSummary(passed=metric.judged)  # every case passes
    for value, count in metric.scores.counts.items():
        better.scores.add(value * factor + 0.01, count)
    improved = GroupSummary(runs=group.runs, outcomes=Counter(ok=group.runs))
    improved.evaluations = {"m": better}
    candidate = Summary(groups={key: improved for key in a.groups})
    assert compare(a, candidate, alpha=ALPHA, rules=EVAL_STRICT).tripped == []
