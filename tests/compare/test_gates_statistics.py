"""The gates' statistical behaviour, measured over seeded samples.

Pairs of 40-run samples drawn from one run distribution must trip each gate
at most at the rate alpha; a known shift must trip its own gate (most of the
time: the measured power is asserted) and any other gate no more than alpha.
The runs are synthetic span records (tests/compare/synth.py) folded by the
real summarizer, so this is the full path from spans to verdict.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest

from adk_otel.traces.comparisons.comparison import GATES, compare, parse_rules
from adk_otel.traces.comparisons.runs import summarize

from .synth import Shape, runs

ALPHA = 0.05
RUNS = 40
RULES = parse_rules(["any"])


def trip_rates(seed: int, pairs: int, candidate: Shape) -> dict[str, float]:
    rng = random.Random(seed)
    tripped: Counter[str] = Counter()
    for _ in range(pairs):
        baseline = summarize(runs(rng, RUNS))
        result = compare(baseline, summarize(runs(rng, RUNS, candidate)), alpha=ALPHA, rules=RULES)
        tripped.update(result.tripped_gates)
    return {gate: tripped[gate] / pairs for gate in GATES}


def test_no_gate_false_alarms_above_alpha_on_one_distribution() -> None:
    rates = trip_rates(seed=25, pairs=200, candidate=Shape())
    assert all(rate <= ALPHA for rate in rates.values()), rates


@pytest.mark.parametrize(
    ("gate", "shift", "power"),
    [
        ("errors", Shape(error_rate=0.35), 0.7),
        ("tokens", Shape(token_scale=2.0), 0.95),
        ("calls", Shape(extra_tool_call=True), 0.95),
        ("latency", Shape(latency_scale=2.0), 0.95),
    ],
)
def test_a_known_shift_trips_its_gate_and_no_other(gate: str, shift: Shape, power: float) -> None:
    rates = trip_rates(seed=7, pairs=100, candidate=shift)
    assert rates[gate] >= power, rates
    others = {other: rate for other, rate in rates.items() if other != gate}
    assert all(rate <= ALPHA for rate in others.values()), rates


def test_a_shift_whose_p_value_underflows_to_zero_still_trips() -> None:
    # 1,000 runs a side, tokens doubled: the test's p-value is 0.0 in floating point.
    rng = random.Random(1)
    baseline = summarize(runs(rng, 1000, Shape(model_calls=4)))
    candidate = summarize(runs(rng, 1000, Shape(model_calls=4, token_scale=2)))
    result = compare(baseline, candidate, alpha=ALPHA, rules=RULES)
    (tokens,) = [f for f in result.findings if f.subject == "mean tokens per run"]
    assert tokens.p_value == 0.0
    assert result.tripped_gates == ["tokens"]
