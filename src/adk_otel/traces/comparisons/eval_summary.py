"""Evaluation results summed up, as ``summarize`` and ``compare`` read them.

Per metric, how many case results passed and failed and their scores
(:class:`MetricSummary`, kept per group of runs); per eval case and metric
the same counts with one trace of each verdict (:class:`CaseTally`); and,
between two sides, the cases that flipped from pass to fail, with a trace of
each side, so a report can link the two (:func:`flips_between`). Only
case-scope results count (one verdict per case and metric, as ADK's own
pass/fail): a case's per-invocation results are parts of that verdict, not
verdicts of their own. The statistics that turn these counts into the
``eval`` gate are in :mod:`.comparison`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ..io.evaluations import EvaluationResult
from .stats import Scores

MAX_CASES = 10_000
"""Eval cases and metrics tallied per side; beyond it a case is not tallied
(its results still count in its group's pass rate and scores)."""

CaseKey = tuple[str, str]
"""``(eval case id, metric name)``."""


@dataclass
class MetricSummary:
    """One metric's case results (in one group of runs, or overall)."""

    passed: int = 0
    failed: int = 0
    other: int = 0
    """Neither pass nor fail: informational, not evaluated."""
    scores: Scores = field(default_factory=Scores)

    @property
    def results(self) -> int:
        return self.passed + self.failed + self.other

    @property
    def judged(self) -> int:
        """Results with a verdict: passed or failed."""
        return self.passed + self.failed

    @property
    def pass_rate(self) -> float | None:
        """Passed over passed and failed; None with no verdict at all."""
        return self.passed / self.judged if self.judged else None

    @property
    def mean_score(self) -> float | None:
        return self.scores.mean()

    def add(self, result: EvaluationResult) -> None:
        if result.passed is True:
            self.passed += 1
        elif result.passed is False:
            self.failed += 1
        else:
            self.other += 1
        if result.score is not None:
            self.scores.add(result.score)

    def merge(self, other: MetricSummary) -> None:
        self.passed += other.passed
        self.failed += other.failed
        self.other += other.other
        self.scores.merge(other.scores)


@dataclass
class CaseTally:
    """One eval case's results of one metric: the verdicts, and a trace of
    each (the first seen), to link a report to a run."""

    passed: int = 0
    failed: int = 0
    eval_set_id: str | None = None
    pass_trace_id: str | None = None
    fail_trace_id: str | None = None

    def add(self, result: EvaluationResult) -> None:
        self.eval_set_id = self.eval_set_id or result.eval_set_id
        if result.passed is True:
            self.passed += 1
            self.pass_trace_id = self.pass_trace_id or result.trace_id
        elif result.passed is False:
            self.failed += 1
            self.fail_trace_id = self.fail_trace_id or result.trace_id

    def merge(self, other: CaseTally) -> None:
        self.passed += other.passed
        self.failed += other.failed
        self.eval_set_id = self.eval_set_id or other.eval_set_id
        self.pass_trace_id = self.pass_trace_id or other.pass_trace_id
        self.fail_trace_id = self.fail_trace_id or other.fail_trace_id


def case_results(results: Iterable[EvaluationResult]) -> list[EvaluationResult]:
    """The case-scope results (one per case and metric)."""
    return [r for r in results if r.scope == "case"]


def by_metric(results: Iterable[EvaluationResult]) -> dict[str, MetricSummary]:
    """Case results per metric name, names in order."""
    summaries: dict[str, MetricSummary] = {}
    for result in case_results(results):
        summaries.setdefault(result.name, MetricSummary()).add(result)
    return dict(sorted(summaries.items()))


def by_case(results: Iterable[EvaluationResult]) -> dict[CaseKey, MetricSummary]:
    """Case results per ``(eval case id, metric name)``."""
    summaries: dict[CaseKey, MetricSummary] = {}
    for result in case_results(results):
        key = (result.eval_case_id or "?", result.name)
        summaries.setdefault(key, MetricSummary()).add(result)
    return dict(sorted(summaries.items()))


def tally(results: Iterable[EvaluationResult]) -> dict[CaseKey, CaseTally]:
    """Case results per ``(eval case id, metric name)``, with a trace of each
    verdict; results without a case id are not tallied."""
    tallies: dict[CaseKey, CaseTally] = {}
    for result in case_results(results):
        add_to_tally(tallies, result)
    return tallies


def add_to_tally(tallies: dict[CaseKey, CaseTally], result: EvaluationResult) -> None:
    """Tally one case result (at most :data:`MAX_CASES` cases and metrics)."""
    if result.eval_case_id is None or result.scope != "case":
        return
    key = (result.eval_case_id, result.name)
    if key in tallies or len(tallies) < MAX_CASES:
        tallies.setdefault(key, CaseTally()).add(result)


@dataclass(frozen=True)
class Flip:
    """A case and metric that passed in the baseline and failed in the candidate."""

    eval_case_id: str
    metric: str
    baseline_trace_id: str | None
    candidate_trace_id: str | None
    baseline_passed: int = 0
    """The baseline's results of the case: every one passed."""
    candidate_passed: int = 0
    candidate_failed: int = 0
    eval_set_id: str | None = None


def flips_between(
    baseline: Mapping[CaseKey, CaseTally], candidate: Mapping[CaseKey, CaseTally]
) -> list[Flip]:
    """Cases whose metric passed in every baseline result and failed in a
    candidate one: most candidate failures first, then by case and metric.
    Each names a passing baseline trace and a failing candidate trace (None
    where a side is a summary file, which keeps no ids)."""
    found = []
    for key, after in candidate.items():
        before = baseline.get(key)
        if before is None or not before.passed or before.failed or not after.failed:
            continue
        found.append(
            Flip(
                eval_case_id=key[0],
                metric=key[1],
                baseline_trace_id=before.pass_trace_id,
                candidate_trace_id=after.fail_trace_id,
                baseline_passed=before.passed,
                candidate_passed=after.passed,
                candidate_failed=after.failed,
                eval_set_id=after.eval_set_id or before.eval_set_id,
            )
        )
    return sorted(found, key=lambda f: (-f.candidate_failed, f.eval_case_id, f.metric))


def flips(
    baseline: Iterable[EvaluationResult], candidate: Iterable[EvaluationResult]
) -> list[Flip]:
    """:func:`flips_between` over two sets of results."""
    return flips_between(tally(baseline), tally(candidate))
