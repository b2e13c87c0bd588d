"""Two sides' run summaries compared, with statistics, and the CI gates.

Each gate is a family of tests: ``errors`` (the run error rate, each error
category's share of runs, each agent's / model's / tool's error rate),
``tokens`` (mean tokens per run), ``latency`` (median and p95 run latency),
``calls`` (mean model and tool calls per run), ``path`` (the distribution of
paths), ``eval`` (per evaluation metric, the case pass rate and the mean
score, where lower is worse). Every test is one-sided, in the worse direction, against the
threshold, and judges the statistic the report shows: one-sided Fisher for
rates, Welch for means, the exceedance test for quantiles
(:mod:`.stats`); each interval is its test inverted. Within a gate the tests
that could reject are Bonferroni-corrected, so a gate's false-alarm rate stays
at most ``alpha`` however many groups, layers and categories it tests, and a
row's interval, p-value and verdict agree. A gate asked for that no group
could judge makes the comparison *inconclusive* (exit 3); groups all too
small are also compared pooled."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from ..io.otlp_json import OtlpJsonError
from .eval_summary import Flip, MetricSummary, flips_between
from .paths import Divergence, first_divergence, lcs_alignment
from .runs import OUTCOMES, GroupKey, GroupSummary, Path, Summary, pooled
from .stats import (
    Distribution,
    OneSided,
    chi_square_counts,
    exceedance_pmf,
    fisher_one_sided,
    mean_drop_test,
    mean_test,
    quantile_test,
    rate_difference_interval,
)

GATES = ("errors", "tokens", "latency", "calls", "path")
"""The gates of the runs themselves: what ``any`` asks for."""
EVAL = "eval"
ALL_GATES = (*GATES, EVAL)
DEFAULT_THRESHOLDS = {
    "errors": 0.0,
    "tokens": 10.0,
    "latency": 20.0,
    "calls": 10.0,
    "path": 10.0,
    EVAL: 0.0,
}
"""Per gate, in percent: errors in percentage points of rate, path in share of
runs whose path would have to change (total variation), eval a drop in
percentage points of pass rate and in percent of the mean score, the others
relative."""
MIN_RUNS = 5
EXIT_INCONCLUSIVE = 3
"""The exit code of a comparison that could not judge a gate asked for (0:
nothing tripped, 1: a gate tripped, 2: unusable input)."""
GATE_TESTS = {"errors": 1, "tokens": 1, "latency": 2, "calls": 2, "path": 1, EVAL: 2}
"""Tests per group and gate at the least: what a gate's runs needed assume."""
POOLED: GroupKey = (("adk.app.name", "all runs, pooled"),)
UNEQUAL = 4.0
TOP_PATHS = 5
_LISTED = 3


@dataclass(frozen=True)
class Rule:
    """One ``--fail-on`` gate and its threshold in percent; for ``eval``, the
    metric it is about (None: every metric)."""

    gate: str
    threshold: float
    metric: str | None = None

    @property
    def text(self) -> str:
        """The rule as ``--fail-on`` takes it."""
        if self.gate == EVAL:
            name = f"eval:{self.metric}" if self.metric else "eval"
            return f"{name}=-{self.threshold:g}%" if self.threshold else name
        if self.gate == "errors" and not self.threshold:
            return "errors"
        return f"{self.gate}=+{self.threshold:g}%"


def parse_rules(texts: Iterable[str]) -> list[Rule]:
    """``errors``, ``tokens=+N%``, ``latency=+N%``, ``calls=+N%``, ``path[=N%]``,
    ``any`` (those five, with :data:`DEFAULT_THRESHOLDS`), ``eval[=-N%]`` (every
    evaluation metric), ``eval:METRIC[=-N%]`` (one metric, its own threshold);
    a later rule of the same gate (and metric) replaces an earlier one."""
    rules: dict[str, Rule] = {}
    for text in texts:
        name, _, value = text.strip().partition("=")
        name = name.strip()
        gate, _, metric = name.partition(":")
        gate = gate.strip().lower()
        metric = metric.strip()
        if gate == "any" and not value and not metric:
            for each in GATES:
                rules.setdefault(each, Rule(each, DEFAULT_THRESHOLDS[each]))
            continue
        if gate not in ALL_GATES or (metric and gate != EVAL) or (":" in name and not metric):
            raise OtlpJsonError(
                f"--fail-on {text!r}: unknown rule; use errors, tokens=+N%, latency=+N%, "
                "calls=+N%, path, any, eval or eval:METRIC=-N%"
            )
        threshold = DEFAULT_THRESHOLDS[gate]
        if value:
            number = value.strip().removesuffix("%")
            number = number.removeprefix("-") if gate == EVAL else number.removeprefix("+")
            try:
                threshold = float(number)
            except ValueError:
                threshold = math.nan
            if not math.isfinite(threshold) or threshold < 0:
                like = f"{name}=-5%" if gate == EVAL else f"{gate}=+10%"
                raise OtlpJsonError(
                    f"--fail-on {text!r}: the threshold must be a percentage >= 0, like {like}"
                )
        rules[f"{gate}:{metric}"] = Rule(gate, threshold, metric or None)
    return list(rules.values())


@dataclass
class Finding:
    """One measured change. ``effect`` is a difference of rates (errors), a
    ratio (tokens, calls, latency) or a total variation distance (path)."""

    gate: str | None
    group: str
    subject: str
    baseline: float | None
    candidate: float | None
    effect: float | None
    interval: tuple[float | None, float | None] | None = None
    p_value: float | None = None
    significant: bool = False
    worse: bool = False
    beyond_threshold: bool = False
    flagged: bool = False
    tripped: bool = False
    new: bool = False
    judged: bool = False
    """Whether the sample could have tripped it (else: too small, inconclusive)."""
    why: str = ""
    metric: str | None = None
    """The evaluation metric (``eval`` findings)."""
    ratio: bool = False
    """The effect is a ratio (judged against ``1 -/+ threshold``), else a difference."""
    lower_is_worse: bool = False
    """A drop is the regression (an eval pass rate or score), not a rise."""
    samples: tuple[int, int] | None = None
    """The sample sizes when they are not the group's runs (eval case results)."""
    test: Callable[[float, float], OneSided] | None = field(default=None, repr=False, compare=False)
    key: tuple[object, ...] = field(default=(), repr=False, compare=False)
    """One hypothesis: the same counts tested twice (a run's error on its
    invocation, its agent and its category) share a key and count once."""


@dataclass
class Side:
    runs: int
    outcomes: dict[str, int]
    latency_p50: float | None
    latency_p95: float | None
    input_tokens: float | None
    output_tokens: float | None
    model_calls: float | None
    tool_calls: float | None


@dataclass
class LayerRow:
    """One agent / model / tool of a group on both sides."""

    kind: str
    name: str
    baseline_spans: int
    candidate_spans: int
    baseline_outcomes: dict[str, int]
    candidate_outcomes: dict[str, int]
    baseline_p50: float | None
    candidate_p50: float | None
    baseline_p95: float | None
    candidate_p95: float | None
    baseline_errors: dict[str, int] = field(default_factory=dict)
    candidate_errors: dict[str, int] = field(default_factory=dict)
    """Failed spans per error category."""


@dataclass
class EvalRow:
    """One evaluation metric of a group on both sides (None: no results there)."""

    metric: str
    baseline: MetricSummary | None
    candidate: MetricSummary | None


@dataclass
class PathShare:
    path: Path
    baseline: int
    candidate: int


@dataclass
class GroupComparison:
    key: GroupKey
    label: str
    baseline: Side | None
    candidate: Side | None
    too_small: bool
    findings: list[Finding] = field(default_factory=list)
    layers: list[LayerRow] = field(default_factory=list)
    paths: list[PathShare] = field(default_factory=list)
    divergences: list[Divergence] = field(default_factory=list)
    evaluations: list[EvalRow] = field(default_factory=list)


@dataclass
class Comparison:
    """The typed result: groups, warnings, the rules asked for and what tripped."""

    alpha: float
    rules: list[Rule]
    groups: list[GroupComparison]
    warnings: list[str]
    baseline_runs: int
    candidate_runs: int
    baseline_source: str = ""
    candidate_source: str = ""
    duplicate_spans: tuple[int, int] = (0, 0)
    """Spans read twice (same trace and span id) on each side, counted once."""
    flips: list[Flip] = field(default_factory=list)
    """Eval cases (and metrics) that passed in every baseline result and
    failed in a candidate one, with a trace of each side."""
    eval_metrics: list[str] = field(default_factory=list)
    """Evaluation metrics with a pass or fail verdict on either side."""

    @property
    def findings(self) -> list[Finding]:
        return [finding for group in self.groups for finding in group.findings]

    @property
    def flagged(self) -> list[Finding]:
        return [finding for finding in self.findings if finding.flagged]

    @property
    def tripped(self) -> list[Finding]:
        return [finding for finding in self.findings if finding.tripped]

    @property
    def tripped_gates(self) -> list[str]:
        return sorted({str(finding.gate) for finding in self.tripped})

    @property
    def inconclusive_gates(self) -> list[str]:
        """Gates asked for that no group (nor the pooled runs) had the runs to
        judge; ``eval`` when a metric it asks for was judged nowhere."""
        gates = [
            rule.gate
            for rule in self.rules
            if rule.gate != EVAL and not any(f.judged for f in self.findings if f.gate == rule.gate)
        ]
        return [*gates, EVAL] if self.inconclusive_metrics else gates

    @property
    def inconclusive_metrics(self) -> list[str]:
        """Evaluation metrics asked for (``eval``: every metric with a verdict
        on either side) that no group had the case results to judge; ``(any)``
        for ``eval`` asked for where no side holds a verdict."""
        asked: list[str] = []
        for rule in self.rules:
            if rule.gate == EVAL:
                asked += [rule.metric] if rule.metric else self.eval_metrics or ["(any)"]
        judged = {f.metric for f in self.findings if f.gate == EVAL and f.judged}
        return [metric for metric in dict.fromkeys(asked) if metric not in judged]

    @property
    def runs_needed(self) -> dict[str, int]:
        """Per inconclusive gate, the fewest runs a side its test needs."""
        return {
            gate: runs_needed(gate, self.alpha / GATE_TESTS[gate])
            for gate in self.inconclusive_gates
        }

    @property
    def verdict(self) -> str:
        """``regression`` (a gate tripped), ``inconclusive`` (none tripped, but
        a gate asked for could not be judged) or ``ok``."""
        if self.tripped:
            return "regression"
        return "inconclusive" if self.inconclusive_gates else "ok"

    @property
    def ok(self) -> bool:
        return self.verdict == "ok"

    @property
    def exit_code(self) -> int:
        return {"ok": 0, "regression": 1, "inconclusive": EXIT_INCONCLUSIVE}[self.verdict]


def group_label(key: GroupKey) -> str:
    return ", ".join(value if name == "adk.app.name" else f"{name}={value}" for name, value in key)


def compare(
    baseline: Summary,
    candidate: Summary,
    *,
    alpha: float = 0.05,
    rules: Sequence[Rule] = (),
) -> Comparison:
    """Compare two summaries; nothing trips unless its gate is in ``rules``."""
    if not 0 < alpha < 1:
        raise OtlpJsonError(f"--alpha {alpha}: must be between 0 and 1")
    gates = {rule.gate for rule in rules}
    warnings = _warnings(baseline, candidate)
    groups: list[GroupComparison] = []
    keys = list(dict.fromkeys([*baseline.groups, *candidate.groups]))
    for key in keys:
        groups.append(_group(key, baseline.groups.get(key), candidate.groups.get(key), warnings))
    metrics = _eval_metrics(baseline, candidate)
    gated = _gated_metrics(rules, metrics)
    _judge(groups, alpha, rules, gated)
    small = [
        gate
        for gate in ALL_GATES
        if (gate in gates or (not gates and (gate != EVAL or metrics)))
        and not any(f.judged for g in groups for f in g.findings if f.gate == gate)
    ]
    if len(keys) > 1 and small:
        # Every group too small for a gate: the runs pooled are the comparison
        # that can still be made (the same cases on both sides keep it fair).
        warnings.append(f"every group too small for {', '.join(small)}: judged on all runs, pooled")
        groups.append(
            _group(POOLED, pooled(baseline.groups.values()), pooled(candidate.groups.values()), [])
        )
        _judge(groups, alpha, rules, gated)
    warnings += _eval_warnings(baseline, candidate, groups)
    return Comparison(
        alpha=alpha,
        rules=list(rules),
        groups=groups,
        warnings=warnings,
        baseline_runs=baseline.runs,
        candidate_runs=candidate.runs,
        baseline_source=baseline.source,
        candidate_source=candidate.source,
        duplicate_spans=(baseline.duplicate_spans, candidate.duplicate_spans),
        flips=flips_between(baseline.eval_cases, candidate.eval_cases),
        eval_metrics=sorted(metrics),
    )


def _eval_metrics(baseline: Summary, candidate: Summary) -> set[str]:
    """Metrics with a pass or fail verdict somewhere: what ``eval`` judges
    (informational metrics, never pass or fail, are shown, not judged)."""
    return {
        name
        for summary in (baseline, candidate)
        for group in summary.groups.values()
        for name, metric in group.evaluations.items()
        if metric.judged
    }


def _gated_metrics(rules: Sequence[Rule], metrics: set[str]) -> dict[str, float]:
    """The eval metrics asked for, each with its threshold in percent."""
    out: dict[str, float] = {}
    for rule in rules:
        if rule.gate == EVAL and rule.metric is None:
            out.update(dict.fromkeys(metrics, rule.threshold))
    for rule in rules:
        if rule.gate == EVAL and rule.metric is not None:
            out[rule.metric] = rule.threshold
    return out


def _group(
    key: GroupKey, b: GroupSummary | None, c: GroupSummary | None, warnings: list[str]
) -> GroupComparison:
    label = group_label(key)
    too_small = b is None or c is None or min(b.runs, c.runs) < MIN_RUNS
    group = GroupComparison(key, label, _side(b), _side(c), too_small)
    if b is not None and c is not None:
        group.findings = _findings(label, b, c) + _eval_findings(label, b, c)
        group.layers = _layers(b, c)
        group.paths, group.divergences = _paths(b, c)
        _layer_warnings(label, b, c, warnings)
    names = sorted({*(b.evaluations if b else {}), *(c.evaluations if c else {})})
    group.evaluations = [
        EvalRow(
            name, b.evaluations.get(name) if b else None, c.evaluations.get(name) if c else None
        )
        for name in names
    ]
    return group


# -- sides, layers, paths ---------------------------------------------------------------


def _side(group: GroupSummary | None) -> Side | None:
    if group is None:
        return None
    return Side(
        runs=group.runs,
        outcomes={outcome: group.outcomes.get(outcome, 0) for outcome in OUTCOMES},
        latency_p50=group.latency_ms.quantile(0.5),
        latency_p95=group.latency_ms.quantile(0.95),
        input_tokens=group.input_tokens.mean(),
        output_tokens=group.output_tokens.mean(),
        model_calls=group.model_calls.mean(),
        tool_calls=group.tool_calls.mean(),
    )


def _layers(b: GroupSummary, c: GroupSummary) -> list[LayerRow]:
    rows = []
    for kind, name in sorted(set(b.layers) | set(c.layers)):
        lb, lc = b.layers.get((kind, name)), c.layers.get((kind, name))
        rows.append(
            LayerRow(
                kind=kind,
                name=name,
                baseline_spans=lb.spans if lb else 0,
                candidate_spans=lc.spans if lc else 0,
                baseline_outcomes=dict(lb.outcomes) if lb else {},
                candidate_outcomes=dict(lc.outcomes) if lc else {},
                baseline_p50=lb.latency_ms.quantile(0.5) if lb else None,
                candidate_p50=lc.latency_ms.quantile(0.5) if lc else None,
                baseline_p95=lb.latency_ms.quantile(0.95) if lb else None,
                candidate_p95=lc.latency_ms.quantile(0.95) if lc else None,
                baseline_errors=dict(lb.errors) if lb else {},
                candidate_errors=dict(lc.errors) if lc else {},
            )
        )
    return rows


def _paths(b: GroupSummary, c: GroupSummary) -> tuple[list[PathShare], list[Divergence]]:
    shares = [
        PathShare(path, b.paths.get(path, 0), c.paths.get(path, 0))
        for path in dict.fromkeys(
            [p for p, _ in b.paths.most_common(TOP_PATHS)]
            + [p for p, _ in c.paths.most_common(TOP_PATHS)]
        )
    ]
    divergences = []
    references = [path for path, _ in b.paths.most_common(TOP_PATHS)]
    if references:
        for path, _ in c.paths.most_common(3):
            if path in b.paths:
                continue
            closest = max(references, key=lambda ref: (len(lcs_alignment(ref, path)[1]), -1))
            divergence = first_divergence(closest, path)
            if divergence is not None:
                divergences.append(divergence)
    return shares, divergences


# -- findings ---------------------------------------------------------------------------

Test = Callable[[float, float], OneSided]
"""A finding's test: ``(level, threshold) -> OneSided``, run once its gate's
family is known (the level is alpha over the family's size)."""


def _rate(
    gate: str | None,
    label: str,
    subject: str,
    a: int,
    n1: int,
    c: int,
    n2: int,
    new: bool = False,
) -> Finding:
    p1, p2 = a / n1 if n1 else 0.0, c / n2 if n2 else 0.0

    def test(level: float, threshold: float) -> OneSided:
        low, high = rate_difference_interval(a, n1, c, n2, 2 * level)
        p = fisher_one_sided(a, n1, c, n2)
        return OneSided(p, low, high, possible=fisher_one_sided(0, n1, n2, n2) < level)

    return Finding(
        gate=gate,
        group=label,
        subject=subject,
        baseline=p1,
        candidate=p2,
        effect=p2 - p1,
        worse=p2 > p1,
        new=new,
        test=test,
        key=(label, a, n1, c, n2),
    )


def _mean(gate: str, label: str, subject: str, b: Distribution, c: Distribution) -> Finding:
    mb, mc = b.mean(), c.mean()
    return _ratio(
        gate,
        label,
        subject,
        mb,
        mc,
        lambda level, threshold: mean_test(b, c, margin=1 + threshold, alpha=level),
    )


def _quantile(
    gate: str, label: str, subject: str, b: Distribution, c: Distribution, q: float
) -> Finding:
    return _ratio(
        gate,
        label,
        subject,
        b.quantile(q),
        c.quantile(q),
        lambda level, threshold: quantile_test(b, c, q, margin=1 + threshold, alpha=level),
    )


def _ratio(
    gate: str, label: str, subject: str, mb: float | None, mc: float | None, test: Test
) -> Finding:
    ratio = mc / mb if mb is not None and mc is not None and mb > 0 else None
    return Finding(
        gate=gate,
        group=label,
        subject=subject,
        baseline=mb,
        candidate=mc,
        effect=ratio,
        worse=mb is not None and mc is not None and mc > mb,
        ratio=True,
        test=test,
        key=(label, subject),
    )


def _eval_findings(label: str, b: GroupSummary, c: GroupSummary) -> list[Finding]:
    """Per metric with a verdict on both sides: its pass rate (a drop judged
    as the errors gate judges a rise: one-sided Fisher, Newcombe's interval)
    and its mean score (a drop judged as tokens judge a rise: Welch's test,
    Fieller's interval)."""
    out = []
    for name in sorted(set(b.evaluations) & set(c.evaluations)):
        mb, mc = b.evaluations[name], c.evaluations[name]
        if not (mb.judged or mc.judged):
            continue  # informational: never pass or fail, no direction to judge
        if mb.judged and mc.judged:
            out.append(_pass_rate(label, name, mb, mc))
        if mb.scores.n and mc.scores.n:
            out.append(_score(label, name, mb, mc))
    return out


def _pass_rate(label: str, metric: str, b: MetricSummary, c: MetricSummary) -> Finding:
    n1, n2 = b.judged, c.judged

    def test(level: float, threshold: float) -> OneSided:
        low, high = rate_difference_interval(b.passed, n1, c.passed, n2, 2 * level)
        p = fisher_one_sided(b.failed, n1, c.failed, n2)  # the failure rate up
        return OneSided(p, low, high, possible=fisher_one_sided(0, n1, n2, n2) < level)

    p1, p2 = b.passed / n1, c.passed / n2
    return Finding(
        gate=EVAL,
        group=label,
        subject=f"eval {metric} pass rate",
        baseline=p1,
        candidate=p2,
        effect=p2 - p1,
        worse=p2 < p1,
        metric=metric,
        lower_is_worse=True,
        samples=(n1, n2),
        test=test,
        key=(label, EVAL, metric, "pass"),
    )


def _score(label: str, metric: str, b: MetricSummary, c: MetricSummary) -> Finding:
    mb, mc = b.mean_score, c.mean_score
    return Finding(
        gate=EVAL,
        group=label,
        subject=f"eval {metric} mean score",
        baseline=mb,
        candidate=mc,
        effect=mc / mb if mb is not None and mc is not None and mb > 0 else None,
        worse=mb is not None and mc is not None and mc < mb,
        metric=metric,
        ratio=True,
        lower_is_worse=True,
        samples=(b.scores.n, c.scores.n),
        test=lambda level, threshold: mean_drop_test(
            b.scores, c.scores, margin=1 - threshold, alpha=level
        ),
        key=(label, EVAL, metric, "score"),
    )


def _findings(label: str, b: GroupSummary, c: GroupSummary) -> list[Finding]:
    out = [
        _rate(
            "errors",
            label,
            "runs ending in error",
            b.outcomes["error"],
            b.runs,
            c.outcomes["error"],
            c.runs,
        )
    ]
    for outcome in ("cancelled", "incomplete", "paused"):
        if b.outcomes[outcome] or c.outcomes[outcome]:
            out.append(
                _rate(
                    None,
                    label,
                    f"runs {outcome}",
                    b.outcomes[outcome],
                    b.runs,
                    c.outcomes[outcome],
                    c.runs,
                )
            )
    for category in sorted(set(b.error_runs) | set(c.error_runs)):
        out.append(
            _rate(
                "errors",
                label,
                f"runs hitting {category}",
                b.error_runs[category],
                b.runs,
                c.error_runs[category],
                c.runs,
                new=not b.error_runs[category],
            )
        )
    for kind, name in sorted(set(b.layers) & set(c.layers)):
        lb, lc = b.layers[(kind, name)], c.layers[(kind, name)]
        if lb.outcomes["error"] or lc.outcomes["error"]:
            out.append(
                _rate(
                    "errors",
                    label,
                    f"{kind} {name} error rate",
                    lb.outcomes["error"],
                    lb.spans,
                    lc.outcomes["error"],
                    lc.spans,
                )
            )
    out += [
        _mean("tokens", label, "mean tokens per run", b.tokens, c.tokens),
        _mean("calls", label, "mean model calls per run", b.model_calls, c.model_calls),
        _mean("calls", label, "mean tool calls per run", b.tool_calls, c.tool_calls),
        _quantile("latency", label, "median run latency (ms)", b.latency_ms, c.latency_ms, 0.5),
        _quantile("latency", label, "p95 run latency (ms)", b.latency_ms, c.latency_ms, 0.95),
    ]
    base_paths = {" > ".join(p): n for p, n in b.paths.items()}
    cand_paths = {" > ".join(p): n for p, n in c.paths.items()}
    distance = 0.5 * sum(
        abs(base_paths.get(p, 0) / b.runs - cand_paths.get(p, 0) / c.runs)
        for p in set(base_paths) | set(cand_paths)
    )
    new_share = sum(n for p, n in cand_paths.items() if p not in base_paths) / c.runs
    chi_p = chi_square_counts(base_paths, cand_paths)
    out.append(
        Finding(
            gate="path",
            group=label,
            subject="path distribution (total variation)",
            baseline=None,
            candidate=new_share,
            effect=distance,
            worse=distance > 0,
            new=new_share > 0,
            test=lambda level, threshold: OneSided(chi_p, distance, distance),
            key=(label, "path"),
        )
    )
    return out


def _judge(
    groups: list[GroupComparison],
    alpha: float,
    rules: Sequence[Rule],
    gated: dict[str, float],
) -> None:
    """Per gate, Bonferroni over the tests that could reject (a test in a group
    too small, or that no data of its sizes could make reject, adds no false
    alarm): each is run at ``alpha / m``, so its interval, its adjusted
    p-value and its verdict describe one decision, and the gate's false-alarm
    rate stays at most ``alpha`` over every group, layer, category and metric.
    The eval metrics asked for are one family; the others (reported only)
    another."""
    thresholds = {**DEFAULT_THRESHOLDS, **{r.gate: r.threshold for r in rules if not r.metric}}
    gates = {rule.gate for rule in rules}
    families: dict[tuple[str | None, bool], list[tuple[GroupComparison, Finding]]] = {}
    for group in groups:
        for finding in group.findings:
            if finding.test is not None:
                asked = finding.gate != EVAL or finding.metric in gated or not gated
                families.setdefault((finding.gate, asked), []).append((group, finding))

    def threshold_of(finding: Finding) -> float:
        if finding.gate == EVAL and finding.metric in gated:
            return gated[str(finding.metric)] / 100
        return thresholds.get(finding.gate or "", 0.0) / 100

    for (gate, asked), family in families.items():
        first = {
            id(finding): finding.test(alpha, threshold_of(finding))
            for _, finding in family
            if finding.test is not None
        }
        live = {
            finding.key
            for group, finding in family
            if not _too_small(group, finding) and first[id(finding)].possible
        }
        m = max(1, len(live))
        for group, finding in family:
            assert finding.test is not None
            threshold = threshold_of(finding)
            result = first[id(finding)] if m == 1 else finding.test(alpha / m, threshold)
            finding.p_value = min(1.0, result.p_value * m)
            finding.interval = None if gate == "path" else (result.low, result.high)
            finding.judged = not _too_small(group, finding) and result.possible
            finding.significant = result.p_value < alpha / m
            finding.beyond_threshold, bound_beyond = _beyond(finding, result, threshold)
            finding.flagged = (
                gate is not None
                and finding.judged
                and finding.significant
                and finding.worse
                and finding.beyond_threshold
                and (gate == "path" or bound_beyond)
            )
            finding.tripped = finding.flagged and gate in gates and asked
            finding.why = _why(finding, group, threshold, needed=runs_needed(gate, alpha / m))


def _too_small(group: GroupComparison, finding: Finding) -> bool:
    if finding.samples is not None:
        return min(finding.samples) < MIN_RUNS
    return group.too_small


def _beyond(finding: Finding, result: OneSided, threshold: float) -> tuple[bool, bool]:
    """Whether the effect, and the interval's end on the side of no change,
    lie beyond the threshold in the worse direction: above ``threshold``
    (``1 + threshold`` for a ratio), or below ``-threshold`` (``1 -
    threshold``) where lower is worse."""
    effect = finding.effect
    if finding.lower_is_worse:
        limit = (1 - threshold) if finding.ratio else -threshold
        high = result.high
        return (
            effect is not None and effect < limit,
            high is not None and high < limit,
        )
    limit = (1 + threshold) if finding.ratio else threshold
    return effect is not None and effect > limit, result.low > limit


def runs_needed(gate: str | None, level: float) -> int:
    """The fewest runs a side (equal sides) with which the gate's test could
    call a change at ``level``: every candidate run failing against none, or
    above the baseline's quantile; :data:`MIN_RUNS` for the mean and path
    tests. For ``eval``, case results a side: every candidate one failing."""
    for n in range(MIN_RUNS, 10_000):
        if gate in ("errors", EVAL, None):
            if fisher_one_sided(0, n, n, n) < level:
                return n
        elif gate == "latency":
            if all(exceedance_pmf(n, math.ceil(q * n), n)[-1] < level for q in (0.5, 0.95)):
                return n
        else:
            return n
    return 10_000  # pragma: no cover (levels below 1e-300)


def _why(finding: Finding, group: GroupComparison, threshold: float, *, needed: int) -> str:
    unit = "case results" if finding.samples is not None else "runs"
    if _too_small(group, finding):
        return f"sample too small (needs {max(needed, MIN_RUNS)} {unit} a side)"
    if not finding.judged:
        return f"inconclusive (needs {needed} {unit} a side)"
    if not finding.worse:
        return "not worse"
    if not finding.beyond_threshold:
        return f"within the {threshold:.0%} threshold"
    if not finding.flagged:
        return f"not significantly beyond the {threshold:.0%} threshold (p={finding.p_value:.3g})"
    return f"significantly beyond the {threshold:.0%} threshold (p={finding.p_value:.3g})"


def _eval_warnings(
    baseline: Summary, candidate: Summary, groups: list[GroupComparison]
) -> list[str]:
    warnings = []
    for group in groups:
        if group.key == POOLED:
            continue
        for row in group.evaluations:
            for side, mine, other in (
                ("baseline", row.baseline, row.candidate),
                ("candidate", row.candidate, row.baseline),
            ):
                if mine is not None and mine.judged and (other is None or not other.judged):
                    missing = "candidate" if side == "baseline" else "baseline"
                    if group.baseline is not None and group.candidate is not None:
                        warnings.append(
                            f"{group.label}: eval {row.metric}: verdicts only in the {side} "
                            f"(no {missing} pass or fail)"
                        )
    for name, summary in (("baseline", baseline), ("candidate", candidate)):
        if summary.unattached_evaluations:
            warnings.append(
                f"{name}: {summary.unattached_evaluations} eval case results without their run "
                "(no span context, or its invocation span not in the input): not counted"
            )
    return sorted(warnings)


# -- comparability --------------------------------------------------------------------------


def _warnings(baseline: Summary, candidate: Summary) -> list[str]:
    warnings = []
    for side, mine, other in (
        ("baseline", baseline, candidate),
        ("candidate", candidate, baseline),
    ):
        alone = sorted(group_label(key) for key in mine.groups.keys() - other.groups.keys())
        missing = "candidate" if side == "baseline" else "baseline"
        if len(alone) > _LISTED:  # one line, not one a group (one session per run, say)
            shown = "; ".join(alone[:_LISTED])
            warnings.append(
                f"{len(alone)} groups only in the {side} (no {missing} runs), e.g. {shown}"
            )
        else:
            warnings += [f"{label}: only in the {side} (no {missing} runs)" for label in alone]
    small, large = sorted((baseline.runs, candidate.runs))
    if small and large / small > UNEQUAL:
        warnings.append(
            f"very unequal sample sizes ({baseline.runs} baseline runs, "
            f"{candidate.runs} candidate runs): the smaller side limits what can be called"
        )
    for name, summary in (("baseline", baseline), ("candidate", candidate)):
        if summary.unattached_spans:
            warnings.append(
                f"{name}: {summary.unattached_spans} agent/model/tool spans without their "
                "invocation span (not counted: export them whole)"
            )
    return sorted(warnings)


def _layer_warnings(label: str, b: GroupSummary, c: GroupSummary, warnings: list[str]) -> None:
    for kind in ("agent", "tool", "model"):
        only_b = sorted(name for k, name in b.layers.keys() - c.layers.keys() if k == kind)
        only_c = sorted(name for k, name in c.layers.keys() - b.layers.keys() if k == kind)
        if only_b:
            warnings.append(f"{label}: {kind}s only in the baseline: {', '.join(only_b)}")
        if only_c:
            warnings.append(f"{label}: {kind}s only in the candidate: {', '.join(only_c)}")
