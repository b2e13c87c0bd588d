"""Two sides' run summaries compared, with statistics, and the CI gates.

Each gate is a family of tests: ``errors`` (the run error rate, each error
category's share of runs, each agent's / model's / tool's error rate),
``tokens`` (tokens per run), ``latency`` (p95 run latency), ``calls`` (model
and tool calls per run), ``path`` (the distribution of paths). Rates use
Fisher's exact test with Newcombe's interval for the difference; values use
the Mann-Whitney U test, with an interval for the ratio (of means for tokens
and calls, of the p95 for latency). Within a gate the p-values are
Holm-adjusted, so a gate's false-alarm rate stays at most ``alpha`` however
many groups, layers and categories it tests. A change is *flagged* when it
is significant, goes the worse way and is beyond its threshold; it *trips*
the run when its gate was asked for (``--fail-on``). Below
:data:`MIN_RUNS` runs a side nothing is flagged: the report gives the deltas
and the divergence, and says the sample is too small.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..io.otlp_json import OtlpJsonError
from .paths import Divergence, first_divergence, lcs_alignment
from .runs import OUTCOMES, GroupKey, GroupSummary, Path, Summary
from .stats import (
    Distribution,
    chi_square_counts,
    fisher_exact,
    holm,
    mann_whitney,
    normal_quantile,
    rate_difference_interval,
    ratio_interval,
)

GATES = ("errors", "tokens", "latency", "calls", "path")
DEFAULT_THRESHOLDS = {"errors": 0.0, "tokens": 10.0, "latency": 20.0, "calls": 10.0, "path": 10.0}
"""Per gate, in percent: errors in percentage points of rate, path in share of
runs whose path would have to change (total variation), the others relative."""
MIN_RUNS = 5
UNEQUAL = 4.0
TOP_PATHS = 5


@dataclass(frozen=True)
class Rule:
    """One ``--fail-on`` gate and its threshold in percent."""

    gate: str
    threshold: float


def parse_rules(texts: Iterable[str]) -> list[Rule]:
    """``errors``, ``tokens=+N%``, ``latency=+N%``, ``calls=+N%``, ``path[=N%]``,
    ``any`` (all, with :data:`DEFAULT_THRESHOLDS`); a later rule of the same
    gate replaces an earlier one."""
    rules: dict[str, Rule] = {}
    for text in texts:
        name, _, value = text.strip().partition("=")
        name = name.strip().lower()
        if name == "any" and not value:
            for gate in GATES:
                rules.setdefault(gate, Rule(gate, DEFAULT_THRESHOLDS[gate]))
            continue
        if name not in GATES:
            raise OtlpJsonError(
                f"--fail-on {text!r}: unknown rule; use errors, tokens=+N%, latency=+N%, "
                "calls=+N%, path or any"
            )
        threshold = DEFAULT_THRESHOLDS[name]
        if value:
            number = value.strip().removeprefix("+").removesuffix("%")
            try:
                threshold = float(number)
            except ValueError:
                threshold = math.nan
            if not math.isfinite(threshold) or threshold < 0:
                raise OtlpJsonError(
                    f"--fail-on {text!r}: the threshold must be a percentage >= 0, like {name}=+10%"
                )
        rules[name] = Rule(name, threshold)
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
    why: str = ""


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
    def ok(self) -> bool:
        return not self.tripped

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1


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
    thresholds = {**DEFAULT_THRESHOLDS, **{rule.gate: rule.threshold for rule in rules}}
    gates = {rule.gate for rule in rules}
    warnings = _warnings(baseline, candidate)
    groups: list[GroupComparison] = []
    keys = list(dict.fromkeys([*baseline.groups, *candidate.groups]))
    for key in keys:
        b, c = baseline.groups.get(key), candidate.groups.get(key)
        label = group_label(key)
        too_small = b is None or c is None or min(b.runs, c.runs) < MIN_RUNS
        group = GroupComparison(key, label, _side(b), _side(c), too_small)
        if b is not None and c is not None:
            group.findings = _findings(label, b, c, alpha)
            group.layers = _layers(b, c)
            group.paths, group.divergences = _paths(b, c)
            _layer_warnings(label, b, c, warnings)
        groups.append(group)
    _judge(groups, alpha, thresholds, gates)
    return Comparison(
        alpha=alpha,
        rules=list(rules),
        groups=groups,
        warnings=warnings,
        baseline_runs=baseline.runs,
        candidate_runs=candidate.runs,
        baseline_source=baseline.source,
        candidate_source=candidate.source,
    )


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


def _rate(
    gate: str | None,
    label: str,
    subject: str,
    a: int,
    n1: int,
    c: int,
    n2: int,
    alpha: float,
    new: bool = False,
) -> Finding:
    p1, p2 = a / n1 if n1 else 0.0, c / n2 if n2 else 0.0
    low, high = rate_difference_interval(a, n1, c, n2, alpha)
    return Finding(
        gate=gate,
        group=label,
        subject=subject,
        baseline=p1,
        candidate=p2,
        effect=p2 - p1,
        interval=(low, high),
        p_value=fisher_exact(a, n1, c, n2),
        worse=p2 > p1,
        new=new,
    )


def _mean_ratio(
    gate: str, label: str, subject: str, b: Distribution, c: Distribution, alpha: float
) -> Finding:
    mb, mc = b.mean(), c.mean()
    ratio: float | None = None
    interval: tuple[float | None, float | None] | None = None
    if mb is not None and mc is not None and mb > 0:
        ratio = mc / mb
        if mc > 0 and b.n > 1 and c.n > 1:
            se = math.sqrt(_var(b) / (b.n * mb * mb) + _var(c) / (c.n * mc * mc))
            z = normal_quantile(1 - alpha / 2)
            interval = (ratio * math.exp(-z * se), ratio * math.exp(z * se))
    return Finding(
        gate=gate,
        group=label,
        subject=subject,
        baseline=mb,
        candidate=mc,
        effect=ratio,
        interval=interval,
        p_value=mann_whitney(b, c),
        worse=mb is not None and mc is not None and mc > mb,
    )


def _var(dist: Distribution) -> float:
    mean = dist.mean() or 0.0
    n = dist.n
    return sum(c * (v - mean) ** 2 for v, c in dist.counts.items()) / (n - 1) if n > 1 else 0.0


def _findings(label: str, b: GroupSummary, c: GroupSummary, alpha: float) -> list[Finding]:
    out = [
        _rate(
            "errors",
            label,
            "runs ending in error",
            b.outcomes["error"],
            b.runs,
            c.outcomes["error"],
            c.runs,
            alpha,
        )
    ]
    for outcome in ("cancelled", "incomplete"):
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
                    alpha,
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
                alpha,
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
                    alpha,
                )
            )
    out.append(_mean_ratio("tokens", label, "tokens per run", b.tokens, c.tokens, alpha))
    out.append(
        _mean_ratio("calls", label, "model calls per run", b.model_calls, c.model_calls, alpha)
    )
    out.append(_mean_ratio("calls", label, "tool calls per run", b.tool_calls, c.tool_calls, alpha))
    p95b, p95c = b.latency_ms.quantile(0.95), c.latency_ms.quantile(0.95)
    out.append(
        Finding(
            gate="latency",
            group=label,
            subject="p95 run latency (ms)",
            baseline=p95b,
            candidate=p95c,
            effect=p95c / p95b if p95b and p95c is not None else None,
            interval=ratio_interval(b.latency_ms, c.latency_ms, 0.95, alpha),
            p_value=mann_whitney(b.latency_ms, c.latency_ms),
            worse=p95b is not None and p95c is not None and p95c > p95b,
        )
    )
    base_paths = {" > ".join(p): n for p, n in b.paths.items()}
    cand_paths = {" > ".join(p): n for p, n in c.paths.items()}
    distance = 0.5 * sum(
        abs(base_paths.get(p, 0) / b.runs - cand_paths.get(p, 0) / c.runs)
        for p in set(base_paths) | set(cand_paths)
    )
    new_share = sum(n for p, n in cand_paths.items() if p not in base_paths) / c.runs
    out.append(
        Finding(
            gate="path",
            group=label,
            subject="path distribution (total variation)",
            baseline=None,
            candidate=new_share,
            effect=distance,
            p_value=chi_square_counts(base_paths, cand_paths),
            worse=distance > 0,
            new=new_share > 0,
        )
    )
    return out


def _judge(
    groups: list[GroupComparison], alpha: float, thresholds: dict[str, float], gates: set[str]
) -> None:
    """Holm-adjust each gate's p-values over every group, then flag and trip."""
    for gate in (*GATES, None):
        family = [
            (group, finding)
            for group in groups
            for finding in group.findings
            if finding.gate == gate and finding.p_value is not None
        ]
        # The same counts tested twice (a run's error on its invocation, its
        # agent and its category alike) are one hypothesis, counted once.
        tests = list(
            dict.fromkeys(
                (group.label, finding.baseline, finding.candidate, finding.p_value)
                for group, finding in family
            )
        )
        adjusted = dict(
            zip(tests, holm([1.0 if test[3] is None else test[3] for test in tests]), strict=True)
        )
        for group, finding in family:
            p = adjusted[(group.label, finding.baseline, finding.candidate, finding.p_value)]
            finding.p_value = p
            finding.significant = p < alpha
            threshold = thresholds.get(gate or "", 0.0) / 100
            effect = finding.effect
            if gate in ("tokens", "calls", "latency"):
                beyond = finding.worse if effect is None else effect - 1 > threshold
            else:
                beyond = effect is not None and effect > threshold
            finding.beyond_threshold = beyond
            finding.flagged = (
                gate is not None
                and not group.too_small
                and finding.significant
                and finding.worse
                and beyond
            )
            finding.tripped = finding.flagged and gate in gates
            finding.why = _why(finding, group.too_small, threshold)


def _why(finding: Finding, too_small: bool, threshold: float) -> str:
    if too_small:
        return "sample too small to call a change"
    if not finding.worse:
        return "not worse"
    if not finding.significant:
        return f"not significant (p={finding.p_value:.3g})"
    if not finding.beyond_threshold:
        return f"significant but within the {threshold:.0%} threshold"
    return f"significant (p={finding.p_value:.3g}) and beyond the {threshold:.0%} threshold"


# -- comparability --------------------------------------------------------------------------


def _warnings(baseline: Summary, candidate: Summary) -> list[str]:
    warnings = []
    for key in baseline.groups.keys() - candidate.groups.keys():
        warnings.append(f"{group_label(key)}: only in the baseline (no candidate runs)")
    for key in candidate.groups.keys() - baseline.groups.keys():
        warnings.append(f"{group_label(key)}: only in the candidate (no baseline runs)")
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
