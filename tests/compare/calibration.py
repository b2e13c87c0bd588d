"""Seeded simulations of the gates: false alarms on pairs from one
distribution, power on known shifts. Sides are built as summaries straight
from drawn values (the spans-to-summary path is tested elsewhere), so a few
thousand comparisons take seconds. docs/compare.md quotes these figures."""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable
from typing import Any

from adk_otel.traces.comparisons.comparison import Rule, compare, parse_rules
from adk_otel.traces.comparisons.runs import GroupSummary, Summary
from adk_otel.traces.comparisons.stats import Distribution

ALPHA = 0.05
RUNS = 40
STRICT = parse_rules(["errors", "tokens=+0%", "latency=+0%", "calls=+0%"])
"""Every one-sided gate at threshold 0: the null hardest to hold."""
DEFAULTS = parse_rules(["errors", "tokens", "latency", "calls"])
"""The defaults: tokens and calls +10 %, latency +20 %."""
ONE_SIDED = ("errors", "tokens", "latency", "calls")

Draw = Callable[[random.Random], float]

VALUES: dict[str, Draw] = {
    "normal": lambda rng: max(1.0, rng.gauss(1000, 150)),
    "log-normal": lambda rng: math.exp(rng.gauss(7, 1)),
    "Pareto 1.5": lambda rng: 100 * rng.paretovariate(1.5),
    "bimodal": lambda rng: rng.gauss(1000, 100) if rng.random() < 0.8 else rng.gauss(4000, 400),
}
"""Latency (ms) and tokens per run: thin, skewed, infinite-variance and two-mode."""

COUNTS: dict[str, Draw] = {
    "normal": lambda rng: max(0, round(rng.gauss(3, 1))),
    "log-normal": lambda rng: round(math.exp(rng.gauss(1, 0.8))),
    "Pareto 1.5": lambda rng: math.floor(rng.paretovariate(1.5)),
    "bimodal": lambda rng: 1 if rng.random() < 0.8 else 6,
}
"""Calls per run, of the same four shapes."""


def side(
    rng: random.Random,
    family: str,
    *,
    runs: int = RUNS,
    error_rate: float = 0.1,
    latency: Callable[[float], float] = lambda v: v,
    tokens: Callable[[float], float] = lambda v: v,
    calls: Callable[[float], float] = lambda v: v,
) -> Summary:
    """One side of ``runs`` runs; the callables shift a measure run by run."""
    group = GroupSummary(runs=runs)
    errors = sum(rng.random() < error_rate for _ in range(runs))
    group.outcomes = Counter(ok=runs - errors, error=errors)
    group.error_runs = Counter(TimeoutError=errors) if errors else Counter()
    group.latency_ms = Distribution.of(latency(VALUES[family](rng)) for _ in range(runs))
    group.tokens = Distribution.of(tokens(VALUES[family](rng)) for _ in range(runs))
    group.model_calls = Distribution.of(calls(COUNTS[family](rng)) for _ in range(runs))
    group.tool_calls = Distribution.of(COUNTS[family](rng) for _ in range(runs))
    group.paths = Counter({("agent:root",): runs})
    return Summary(groups={(("adk.app.name", "shop"),): group})


def trip_rates(
    seed: int,
    pairs: int,
    family: str,
    *,
    rules: list[Rule] = STRICT,
    runs: int = RUNS,
    **shift: Any,
) -> dict[str, float]:
    """Per gate, the share of ``pairs`` comparisons that tripped it."""
    rng = random.Random(seed)
    tripped: Counter[str] = Counter()
    for _ in range(pairs):
        base = side(rng, family, runs=runs)
        cand = side(rng, family, runs=runs, **shift)
        tripped.update(compare(base, cand, alpha=ALPHA, rules=rules).tripped_gates)
    return {gate: tripped[gate] / pairs for gate in ONE_SIDED}


def slow_tail(seed: int, share: float, factor: float) -> Callable[[float], float]:
    """A shift of a few runs only: ``share`` of them ``factor`` times slower
    (the median barely moves, the p95 does)."""
    rng = random.Random(seed)
    return lambda v: v * factor if rng.random() < share else v


# -- the eval gate: per metric, the case pass rate and the mean score -------------------

SCORES: dict[str, Draw] = {
    "beta(5,2)": lambda rng: rng.betavariate(5, 2),
    "U-shaped beta(0.5,0.5)": lambda rng: rng.betavariate(0.5, 0.5),
    "atoms at 0 and 1 + beta(2,2)": lambda rng: (
        1.0 if (u := rng.random()) < 0.3 else 0.0 if u < 0.5 else rng.betavariate(2, 2)
    ),
    "pass/fail 0 or 1 (p 0.8)": lambda rng: float(rng.random() < 0.8),
    "rubric thirds": lambda rng: rng.choice((0.0, 1 / 3, 2 / 3, 1.0, 1.0)),
    "log-normal (sigma 1)": lambda rng: math.exp(rng.gauss(0, 1)),
}
"""A metric's case scores: skewed and U-shaped bounded ones, a mixture with
atoms at 0 and 1, scores that are the verdict, rubric fractions, and an
unbounded heavy-tailed one."""

PASS_AT = {"log-normal (sigma 1)": 1.0, "pass/fail 0 or 1 (p 0.8)": 1.0}
"""The metric's threshold: a case passes when its score reaches it (ADK's
rule); 0.5 where not listed."""

EVAL_STRICT = parse_rules(["eval"])
"""Every metric at threshold 0: any drop significant at alpha trips."""

Score = Callable[[random.Random, float], float]


def eval_side(
    rng: random.Random,
    family: str,
    *,
    results: int = RUNS,
    metrics: int = 1,
    score: Score = lambda rng, v: v,
    verdicts: float | None = None,
) -> Summary:
    """One side: ``results`` case results of each of ``metrics`` metrics (each
    result one run); ``score`` shifts a drawn score; ``verdicts``: each result
    passes with this probability, whatever its score (else: score >= the
    metric's threshold, as ADK decides)."""
    group = GroupSummary(runs=results, outcomes=Counter(ok=results))
    group.paths = Counter({("agent:root",): results})
    threshold = PASS_AT.get(family, 0.5)
    for index in range(metrics):
        metric = group.metric(f"metric_{index}")
        for _ in range(results):
            value = score(rng, SCORES[family](rng))
            metric.scores.add(value)
            passed = rng.random() < verdicts if verdicts is not None else value >= threshold
            metric.passed += passed
            metric.failed += not passed
    return Summary(groups={(("adk.app.name", "shop"),): group})


def eval_trip_rates(
    seed: int,
    pairs: int,
    family: str,
    *,
    rules: list[Rule] = EVAL_STRICT,
    results: int = RUNS,
    metrics: int = 1,
    score: Score = lambda rng, v: v,
    verdicts: float | None = None,
) -> dict[str, float]:
    """The share of ``pairs`` comparisons that tripped the eval gate, and the
    share in which each of its tests (pass rate, mean score) tripped."""
    rng = random.Random(seed)
    tripped: Counter[str] = Counter()
    for _ in range(pairs):
        base = eval_side(rng, family, results=results, metrics=metrics, verdicts=verdicts)
        cand = eval_side(
            rng, family, results=results, metrics=metrics, score=score, verdicts=verdicts
        )
        result = compare(base, cand, alpha=ALPHA, rules=rules)
        kinds = {f.subject.rsplit(" ", 2)[-2] for f in result.tripped if f.gate == "eval"}
        tripped.update({"eval"} if kinds else set())
        tripped.update(kinds)
    return {kind: tripped[kind] / pairs for kind in ("eval", "pass", "mean")}


def regressed(share: float, to: Draw) -> Score:
    """A regression of some cases only: ``share`` of the candidate's results
    drawn from ``to`` instead."""
    return lambda rng, value: to(rng) if rng.random() < share else value


BROKEN: dict[str, Draw] = {
    "beta(5,2)": lambda rng: rng.betavariate(1, 4),
    "U-shaped beta(0.5,0.5)": lambda rng: rng.betavariate(1, 4),
    "atoms at 0 and 1 + beta(2,2)": lambda rng: 0.0,
    "pass/fail 0 or 1 (p 0.8)": lambda rng: 0.0,
    "rubric thirds": lambda rng: rng.choice((0.0, 1 / 3)),
    "log-normal (sigma 1)": lambda rng: math.exp(rng.gauss(-1.5, 1)),
}
"""What a regressed case scores, per family: low."""
