"""Evaluation results summed up, as ``summarize`` and ``compare`` will read them.

The reading side of the evaluation gate (docs/evaluations.md, "Not yet"): per
metric, how many case results passed and failed and the scores; per eval case
too; and, between two sets of results, which cases flipped from pass to fail,
with the trace of each side, so a report can link the two. Only case-scope
results count (one verdict per case and metric, as ADK's own pass/fail); the
statistics that turn these counts into a gate live with the compare modules.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ..io.evaluations import EvaluationResult


@dataclass
class MetricSummary:
    """One metric's case results."""

    passed: int = 0
    failed: int = 0
    other: int = 0
    """Neither pass nor fail: informational, not evaluated."""
    scores: list[float] = field(default_factory=list)

    @property
    def pass_rate(self) -> float | None:
        """Passed over passed and failed; None with no verdict at all."""
        judged = self.passed + self.failed
        return self.passed / judged if judged else None

    def add(self, result: EvaluationResult) -> None:
        if result.passed is True:
            self.passed += 1
        elif result.passed is False:
            self.failed += 1
        else:
            self.other += 1
        if result.score is not None:
            self.scores.append(result.score)


def case_results(results: Iterable[EvaluationResult]) -> list[EvaluationResult]:
    """The case-scope results (one per case and metric)."""
    return [r for r in results if r.scope == "case"]


def by_metric(results: Iterable[EvaluationResult]) -> dict[str, MetricSummary]:
    """Case results per metric name, names in order."""
    summaries: dict[str, MetricSummary] = {}
    for result in case_results(results):
        summaries.setdefault(result.name, MetricSummary()).add(result)
    return dict(sorted(summaries.items()))


def by_case(results: Iterable[EvaluationResult]) -> dict[tuple[str, str], MetricSummary]:
    """Case results per ``(eval case id, metric name)`` (``--group-by`` case)."""
    summaries: dict[tuple[str, str], MetricSummary] = {}
    for result in case_results(results):
        key = (result.eval_case_id or "?", result.name)
        summaries.setdefault(key, MetricSummary()).add(result)
    return dict(sorted(summaries.items()))


@dataclass(frozen=True)
class Flip:
    """A case and metric that passed in the baseline and failed in the candidate."""

    eval_case_id: str
    metric: str
    baseline_trace_id: str | None
    candidate_trace_id: str | None
    baseline_score: float | None
    candidate_score: float | None


def flips(
    baseline: Iterable[EvaluationResult], candidate: Iterable[EvaluationResult]
) -> list[Flip]:
    """Cases whose metric passed in every baseline result and failed in a
    candidate one, in case and metric order."""
    before: dict[tuple[str, str], list[EvaluationResult]] = {}
    for result in case_results(baseline):
        before.setdefault((result.eval_case_id or "?", result.name), []).append(result)
    found: dict[tuple[str, str], Flip] = {}
    for result in case_results(candidate):
        key = (result.eval_case_id or "?", result.name)
        earlier = before.get(key)
        if result.passed is not False or not earlier or key in found:
            continue
        if all(r.passed is True for r in earlier):
            found[key] = Flip(
                key[0],
                key[1],
                earlier[0].trace_id,
                result.trace_id,
                earlier[0].score,
                result.score,
            )
    return [found[key] for key in sorted(found)]
