"""The gates' calibration, measured: false alarms on pairs drawn from one
distribution (thin, skewed, infinite-variance and two-mode), false alarms on
changes exactly at the threshold, power on known shifts, and the symmetry
every one-sided gate owes: of A against B and B against A, at most one trips.

A false-alarm rate is estimated from a few hundred seeded pairs; the test
fails when the estimate is more than two standard errors above alpha, that
is when the simulation shows the gate alarming more often than alpha (the
harness catches a miscalibrated test: see the last test). The figures in
docs/compare.md come from the same functions with more pairs.
"""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adk_otel.traces.comparisons.comparison import compare
from adk_otel.traces.comparisons.runs import GroupSummary, Summary
from adk_otel.traces.comparisons.stats import Distribution, student_t_sf

from .calibration import ALPHA, DEFAULTS, ONE_SIDED, STRICT, VALUES, side, slow_tail, trip_rates

PAIRS = 300


def alarm_bound(pairs: int) -> float:
    return ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / pairs)


@pytest.mark.parametrize("family", VALUES)
def test_no_gate_alarms_above_alpha_on_one_distribution(family: str) -> None:
    rates = trip_rates(seed=101, pairs=PAIRS, family=family)  # every threshold 0
    assert all(rate <= alarm_bound(PAIRS) for rate in rates.values()), rates


@pytest.mark.parametrize("family", VALUES)
def test_a_change_exactly_at_the_threshold_alarms_at_most_alpha(family: str) -> None:
    # Latency x1.2, tokens and calls x1.1: right at the default thresholds.
    rates = trip_rates(
        seed=202,
        pairs=PAIRS,
        family=family,
        rules=DEFAULTS,
        latency=lambda v: v * 1.2,
        tokens=lambda v: v * 1.1,
        calls=lambda v: v * 1.1,
    )
    assert all(rate <= alarm_bound(PAIRS) for rate in rates.values()), rates


POWER = {
    # family: the least share of 100 pairs (40 runs a side) each gate must trip on
    # errors 10 % -> 35 %, tokens x2, latency x2, one model call more per run.
    # (docs/compare.md has the rates over 500 pairs; these floors sit below them
    # by the noise of 100 pairs: heavy tails cost power, never calibration)
    "normal": {"errors": 0.6, "tokens": 0.95, "latency": 0.95, "calls": 0.65},
    "log-normal": {"errors": 0.6, "tokens": 0.5, "latency": 0.3, "calls": 0.06},
    "Pareto 1.5": {"errors": 0.6, "tokens": 0.4, "latency": 0.85, "calls": 0.1},
    "bimodal": {"errors": 0.65, "tokens": 0.85, "latency": 0.95, "calls": 0.25},
}


@pytest.mark.parametrize("family", VALUES)
def test_known_shifts_trip_their_gates(family: str) -> None:
    rates = trip_rates(
        seed=303,
        pairs=100,
        family=family,
        rules=DEFAULTS,
        error_rate=0.35,
        latency=lambda v: v * 2,
        tokens=lambda v: v * 2,
        calls=lambda v: v + 1,
    )
    assert all(rates[gate] >= floor for gate, floor in POWER[family].items()), rates


def test_a_slower_tail_trips_latency_with_enough_runs() -> None:
    # A fifth of the runs 3x slower: the median moves 5 %, the p95 more than
    # doubles. 40 runs a side hold two runs above the p95, too few to call it
    # reliably; 100 do.
    rates = trip_rates(
        seed=404, pairs=40, family="normal", runs=100, rules=DEFAULTS,
        latency=slow_tail(5, 0.2, 3.0),
    )  # fmt: skip
    assert rates["latency"] >= 0.8, rates
    assert max(rates[gate] for gate in ONE_SIDED if gate != "latency") <= 0.1, rates


# -- symmetry and agreement, for any two sets ------------------------------------------

_values = st.floats(min_value=1.0, max_value=1e5, allow_nan=False)


@st.composite
def sides(draw: st.DrawFn) -> Summary:
    runs = draw(st.integers(min_value=5, max_value=30))
    errors = draw(st.integers(min_value=0, max_value=runs))
    group = GroupSummary(runs=runs, outcomes=Counter(ok=runs - errors, error=errors))
    group.latency_ms = Distribution.of(draw(st.lists(_values, min_size=runs, max_size=runs)))
    group.tokens = Distribution.of(draw(st.lists(_values, min_size=runs, max_size=runs)))
    counts = st.lists(st.integers(min_value=0, max_value=8), min_size=runs, max_size=runs)
    group.model_calls = Distribution.of(draw(counts))
    group.tool_calls = Distribution.of(draw(counts))
    group.paths = Counter({("agent:root",): runs})
    return Summary(groups={(("adk.app.name", "shop"),): group})


@settings(max_examples=150, deadline=None)
@given(a=sides(), b=sides())
def test_at_most_one_direction_trips_and_every_trip_tells_one_story(a, b) -> None:
    forward = compare(a, b, alpha=ALPHA, rules=STRICT)
    backward = compare(b, a, alpha=ALPHA, rules=STRICT)
    # Per test, not per gate: one gate may judge two statistics that moved apart
    # (more model calls and fewer tool calls trip `calls` both ways, rightly).
    assert not {f.subject for f in forward.tripped} & {f.subject for f in backward.tripped}
    for result in (forward, backward):
        for finding in result.tripped:
            # the statistic went the worse way, its interval clears "no change",
            # the effect lies in the interval and the p-value is significant
            assert finding.interval is not None and finding.effect is not None
            low, high = finding.interval
            assert low is not None and finding.p_value is not None
            no_change = 0.0 if finding.gate == "errors" else 1.0
            assert finding.worse and finding.effect > no_change and low > no_change
            assert low <= finding.effect and (high is None or finding.effect <= high)
            assert finding.p_value < ALPHA


@settings(max_examples=100, deadline=None)
@given(a=sides(), factor=st.floats(min_value=0.1, max_value=1.0))
def test_an_improvement_never_trips(a, factor) -> None:
    # Every latency, token count and call count of the candidate scaled down.
    (group,) = a.groups.values()
    better = GroupSummary(runs=group.runs, outcomes=Counter(ok=group.runs))
    for name in ("latency_ms", "tokens", "model_calls", "tool_calls"):
        values = [v for v, c in getattr(group, name).counts.items() for _ in range(c)]
        setattr(better, name, Distribution.of(v * factor for v in values))
    better.paths = Counter(group.paths)
    candidate = Summary(groups={key: better for key in a.groups})
    assert compare(a, candidate, alpha=ALPHA, rules=STRICT).tripped == []


def test_the_harness_catches_a_miscalibrated_test() -> None:
    # A t-test of the log of the ratio of means, the obvious alternative to
    # Welch's test of the difference: on Pareto values it alarms well above
    # alpha, and the bound used above says so.
    rng = random.Random(505)
    alarms, pairs = 0, 1000
    for _ in range(pairs):
        b = side(rng, "Pareto 1.5", runs=10).groups
        c = side(rng, "Pareto 1.5", runs=10).groups
        (base,), (cand,) = (g.tokens for g in b.values()), (g.tokens for g in c.values())
        se = math.sqrt(_relvar(base) + _relvar(cand))
        t = math.log((cand.mean() or 1) / (base.mean() or 1)) / se
        alarms += student_t_sf(t, base.n + cand.n - 2) < ALPHA
    assert alarms / pairs > alarm_bound(pairs)


def _relvar(dist: Distribution) -> float:
    mean = dist.mean() or 1.0
    variance = sum(c * (v - mean) ** 2 for v, c in dist.counts.items()) / (dist.n - 1)
    return variance / (dist.n * mean * mean)
