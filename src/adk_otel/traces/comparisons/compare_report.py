"""A :class:`~.comparison.Comparison` as aligned text, markdown or JSON.

The text report leads with the verdict and what tripped, then per group the
measured changes (with intervals and Bonferroni-adjusted p-values), the layers,
the evaluation metrics, the paths and where the candidate's paths diverge; then
the eval cases that flipped from pass to fail, with a trace id of each side.
Colour follows the tree's rules (red: tripped, yellow: flagged but not gated,
green: a clean verdict). The JSON shape is docs/compare-output.schema.json.
"""

from __future__ import annotations

import math
from typing import Any

from .comparison import (
    EVAL,
    MIN_RUNS,
    Comparison,
    EvalRow,
    Finding,
    GroupComparison,
    LayerRow,
    Side,
    group_label,
)
from .eval_summary import Flip, MetricSummary
from .paths import Divergence
from .runs import Summary

SCHEMA_VERSION = 3
FLIPS_SHOWN = 20
"""Flips listed in the text and markdown reports (JSON lists them all)."""
_COLOURS = {"red": "31", "yellow": "33", "green": "32", "dim": "2", "bold": "1"}


def _paint(text: str, colour: str, enabled: bool) -> str:
    return f"\x1b[{_COLOURS[colour]}m{text}\x1b[0m" if enabled else text


# -- JSON ------------------------------------------------------------------------------------


def _number(value: float | None) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return round(value, 6)


def finding_json(finding: Finding) -> dict[str, Any]:
    return {
        "gate": finding.gate,
        "metric": finding.metric,
        "subject": finding.subject,
        "baseline": _number(finding.baseline),
        "candidate": _number(finding.candidate),
        "effect": _number(finding.effect),
        "interval": (
            [_number(finding.interval[0]), _number(finding.interval[1])]
            if finding.interval
            else None
        ),
        "p_value": _number(finding.p_value),
        "judged": finding.judged,
        "significant": finding.significant,
        "worse": finding.worse,
        "beyond_threshold": finding.beyond_threshold,
        "flagged": finding.flagged,
        "tripped": finding.tripped,
        "new": finding.new,
        "why": finding.why,
    }


def _side_json(side: Side | None) -> dict[str, Any] | None:
    if side is None:
        return None
    return {
        "runs": side.runs,
        "outcomes": side.outcomes,
        "latency_p50_ms": _number(side.latency_p50),
        "latency_p95_ms": _number(side.latency_p95),
        "input_tokens_per_run": _number(side.input_tokens),
        "output_tokens_per_run": _number(side.output_tokens),
        "model_calls_per_run": _number(side.model_calls),
        "tool_calls_per_run": _number(side.tool_calls),
    }


def _divergence_json(divergence: Divergence) -> dict[str, Any]:
    return {
        "baseline_path": list(divergence.baseline_path),
        "candidate_path": list(divergence.candidate_path),
        "step": divergence.step,
        "after": divergence.after,
        "baseline_step": divergence.baseline_step,
        "candidate_step": divergence.candidate_step,
    }


def _group_json(group: GroupComparison) -> dict[str, Any]:
    return {
        "key": dict(group.key),
        "label": group.label,
        "too_small": group.too_small,
        "baseline": _side_json(group.baseline),
        "candidate": _side_json(group.candidate),
        "findings": [finding_json(finding) for finding in group.findings],
        "layers": [
            {
                "kind": row.kind,
                "name": row.name,
                "baseline_spans": row.baseline_spans,
                "candidate_spans": row.candidate_spans,
                "baseline_outcomes": row.baseline_outcomes,
                "candidate_outcomes": row.candidate_outcomes,
                "baseline_p50_ms": _number(row.baseline_p50),
                "candidate_p50_ms": _number(row.candidate_p50),
                "baseline_p95_ms": _number(row.baseline_p95),
                "candidate_p95_ms": _number(row.candidate_p95),
                "baseline_errors": row.baseline_errors,
                "candidate_errors": row.candidate_errors,
            }
            for row in group.layers
        ],
        "paths": [
            {"path": list(share.path), "baseline": share.baseline, "candidate": share.candidate}
            for share in group.paths
        ],
        "divergences": [_divergence_json(d) for d in group.divergences],
        "evaluations": [
            {
                "metric": row.metric,
                "baseline": _metric_json(row.baseline),
                "candidate": _metric_json(row.candidate),
            }
            for row in group.evaluations
        ],
    }


def _metric_json(metric: MetricSummary | None) -> dict[str, Any] | None:
    if metric is None:
        return None
    return {
        "results": metric.results,
        "passed": metric.passed,
        "failed": metric.failed,
        "other": metric.other,
        "pass_rate": _number(metric.pass_rate),
        "scored": metric.scores.n,
        "mean_score": _number(metric.mean_score),
    }


def flip_json(flip: Flip) -> dict[str, Any]:
    return {
        "eval_set_id": flip.eval_set_id,
        "eval_case_id": flip.eval_case_id,
        "metric": flip.metric,
        "baseline_passed": flip.baseline_passed,
        "candidate_passed": flip.candidate_passed,
        "candidate_failed": flip.candidate_failed,
        "baseline_trace_id": flip.baseline_trace_id,
        "candidate_trace_id": flip.candidate_trace_id,
    }


def comparison_json(comparison: Comparison) -> dict[str, Any]:
    """``{"version", "verdict", "exit_code", "tripped", ...}`` (see the schema)."""
    return {
        "version": SCHEMA_VERSION,
        "verdict": comparison.verdict,
        "exit_code": comparison.exit_code,
        "inconclusive_gates": comparison.inconclusive_gates,
        "inconclusive_metrics": comparison.inconclusive_metrics,
        "runs_needed": comparison.runs_needed,
        "duplicate_spans": {
            "baseline": comparison.duplicate_spans[0],
            "candidate": comparison.duplicate_spans[1],
        },
        "alpha": comparison.alpha,
        "rules": [
            {"gate": r.gate, "threshold_percent": r.threshold, "metric": r.metric}
            for r in comparison.rules
        ],
        "tripped_gates": comparison.tripped_gates,
        "baseline": {"source": comparison.baseline_source, "runs": comparison.baseline_runs},
        "candidate": {"source": comparison.candidate_source, "runs": comparison.candidate_runs},
        "warnings": comparison.warnings,
        "tripped": [{"group": f.group, **finding_json(f)} for f in comparison.tripped],
        "groups": [_group_json(group) for group in comparison.groups],
        "flips": [flip_json(flip) for flip in comparison.flips],
    }


# -- values as text ------------------------------------------------------------------------------


def _is_rate(finding: Finding) -> bool:
    """Whether the finding's values are shares of runs (error and outcome
    rates): shown as percentages and percentage points."""
    return (
        finding.gate == "errors"
        or finding.subject.startswith("runs ")
        or (finding.gate == EVAL and not finding.ratio)
    )


def _value(finding: Finding, value: float | None) -> str:
    if value is None:
        return "-"
    if _is_rate(finding):
        return f"{value:.1%}"
    if finding.gate == "path":
        return f"{value:.0%} new"
    return f"{value:.4g}"


def _change(finding: Finding) -> str:
    effect = finding.effect
    if effect is None:
        return "-"
    if _is_rate(finding):
        return f"{effect * 100:+.1f} pp"
    if finding.gate == "path":
        return f"TV {effect:.0%}"
    return f"x{effect:.2f}"


def _interval(finding: Finding) -> str:
    if finding.interval is None:
        return "-"
    low, high = finding.interval
    if _is_rate(finding):
        return f"[{(low or 0) * 100:+.1f}, {(high or 0) * 100:+.1f}]"
    high_text = "inf" if high is None else f"{high:.2f}"
    return f"[x{low or 0:.2f}, x{high_text}]"


def _p(finding: Finding) -> str:
    p = finding.p_value
    if p is None:
        return "-"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def _verdict(finding: Finding) -> str:
    if finding.tripped:
        return f"TRIPPED {finding.gate}"
    if finding.flagged:
        return "flagged (not gated)"
    return finding.why


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def _path(path: tuple[str, ...]) -> str:
    return " > ".join(path) if path else "(no agent or tool step)"


def _divergence_text(divergence: Divergence) -> str:
    where = f"after {divergence.after}" if divergence.after else "at the first step"
    if divergence.baseline_step and divergence.candidate_step:
        what = f"baseline {divergence.baseline_step}, candidate {divergence.candidate_step}"
    elif divergence.candidate_step:
        what = f"candidate inserts {divergence.candidate_step}"
    else:
        what = f"candidate skips {divergence.baseline_step}"
    return f"step {divergence.step}, {where}: {what}"


def _subject(finding: Finding) -> str:
    """An error category never seen in the baseline is called out as new."""
    return (
        f"{finding.subject} (new)" if finding.new and finding.gate == "errors" else finding.subject
    )


def _tripped(comparison: Comparison) -> list[tuple[Finding, str]]:
    """Tripped findings, those with the same counts (one failure seen on the
    invocation, its agent and its category) on one line, their subjects joined."""
    merged: dict[tuple[object, ...], tuple[Finding, list[str]]] = {}
    for f in comparison.tripped:
        key = (f.gate, f.group, f.baseline, f.candidate, f.p_value)
        merged.setdefault(key, (f, []))[1].append(_subject(f))
    return [(finding, " = ".join(subjects)) for finding, subjects in merged.values()]


def headline(comparison: Comparison) -> str:
    if comparison.tripped:
        return f"REGRESSION (tripped: {', '.join(comparison.tripped_gates)})"
    if comparison.inconclusive_gates:
        needed = "; ".join(
            _needed(comparison, gate, runs) for gate, runs in comparison.runs_needed.items()
        )
        return f"INCONCLUSIVE (too few runs to judge: {needed})"
    if not comparison.rules:
        return "OK (report only: no --fail-on gate given)"
    return "OK (no gate tripped)"


def _needed(comparison: Comparison, gate: str, runs: int) -> str:
    if gate != EVAL:
        return f"{gate} needs {runs} runs a side"
    metrics = comparison.inconclusive_metrics
    if metrics == ["(any)"]:
        return "eval found no case result with a pass or fail"
    return f"eval ({', '.join(metrics)}) needs {runs} case results a side"


def _rules_text(comparison: Comparison) -> str:
    if not comparison.rules:
        return "none"
    return ", ".join(rule.text for rule in comparison.rules)


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def _duplicates(comparison: Comparison) -> str | None:
    b, c = comparison.duplicate_spans
    if not b and not c:
        return None
    return (
        f"duplicate spans dropped (same trace and span id, counted once): "
        f"{b} baseline, {c} candidate"
    )


def _colour(comparison: Comparison) -> str:
    return {"regression": "red", "inconclusive": "yellow"}.get(comparison.verdict, "green")


def _errors(counts: dict[str, int]) -> str:
    return ", ".join(f"{name} {count}" for name, count in sorted(counts.items())) or "-"


def _layer_rows(layers: list[LayerRow]) -> list[list[str]]:
    rows = [
        ["layer", "spans b/c", "errors b/c", "p50 ms b/c", "p95 ms b/c", "error categories b/c"]
    ]
    for row in layers:
        rows.append(
            [
                f"{row.kind} {row.name}",
                f"{row.baseline_spans}/{row.candidate_spans}",
                f"{row.baseline_outcomes.get('error', 0)}/{row.candidate_outcomes.get('error', 0)}",
                f"{_ms(row.baseline_p50)}/{_ms(row.candidate_p50)}",
                f"{_ms(row.baseline_p95)}/{_ms(row.candidate_p95)}",
                (
                    f"{_errors(row.baseline_errors)} / {_errors(row.candidate_errors)}"
                    if row.baseline_errors or row.candidate_errors
                    else "-"
                ),
            ]
        )
    return rows


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _eval_rows(rows: list[EvalRow]) -> list[list[str]]:
    table = [["eval metric", "results b/c", "pass rate b/c", "mean score b/c"]]
    for row in rows:
        b, c = row.baseline, row.candidate
        table.append(
            [
                row.metric,
                f"{b.results if b else 0}/{c.results if c else 0}",
                f"{_rate(b.pass_rate if b else None)}/{_rate(c.pass_rate if c else None)}",
                f"{_ms(b.mean_score if b else None)}/{_ms(c.mean_score if c else None)}",
            ]
        )
    return table


def _flip_rows(flips: list[Flip]) -> list[list[str]]:
    table = [["case", "metric", "baseline", "candidate", "baseline trace", "candidate trace"]]
    for flip in flips[:FLIPS_SHOWN]:
        total = flip.candidate_passed + flip.candidate_failed
        table.append(
            [
                flip.eval_case_id,
                flip.metric,
                f"{flip.baseline_passed}/{flip.baseline_passed} pass",
                f"{flip.candidate_failed}/{total} fail",
                flip.baseline_trace_id or "-",
                flip.candidate_trace_id or "-",
            ]
        )
    return table


def _flips_head(comparison: Comparison) -> str:
    more = len(comparison.flips) - FLIPS_SHOWN
    shown = f" (the first {FLIPS_SHOWN}; --format json lists all)" if more > 0 else ""
    return (
        f"eval cases flipped from pass to fail: {len(comparison.flips)}{shown}; "
        "read a trace with adk-otel tree FILES --trace-id ID"
    )


def _small(group: GroupComparison) -> str:
    b = group.baseline.runs if group.baseline else 0
    c = group.candidate.runs if group.candidate else 0

    return (
        f"sample too small to call a change ({b} baseline, {c} candidate runs; "
        f"at least {MIN_RUNS} a side, 30 or more for a useful gate): deltas only"
    )


def render_text(comparison: Comparison, *, color: bool = False) -> str:
    """The report for a terminal."""
    head = headline(comparison)
    lines = [
        "adk-otel compare: " + _paint(head, _colour(comparison), color),
        f"baseline: {comparison.baseline_runs} runs ({comparison.baseline_source or '-'})",
        f"candidate: {comparison.candidate_runs} runs ({comparison.candidate_source or '-'})",
        f"alpha {comparison.alpha:g}; gates: {_rules_text(comparison)}",
    ]
    if duplicates := _duplicates(comparison):
        lines.append(duplicates)
    for finding, subject in _tripped(comparison):
        lines.append(
            _paint(
                f"  TRIPPED {finding.gate}: {finding.group}: {subject} "
                f"{_value(finding, finding.baseline)} -> {_value(finding, finding.candidate)} "
                f"({_change(finding)} {_interval(finding)}, p={_p(finding)})",
                "red",
                color,
            )
        )
    for group in comparison.groups:
        b = group.baseline.runs if group.baseline else 0
        c = group.candidate.runs if group.candidate else 0
        lines += [
            "",
            _paint(f"== {group.label} ({b} baseline vs {c} candidate runs)", "bold", color),
        ]
        if group.too_small:
            lines.append("  " + _paint(_small(group), "yellow", color))
        if group.baseline is not None and group.candidate is not None:
            lines += ["  " + line for line in _outcome_lines(group.baseline, group.candidate)]
        if group.findings:
            rows = [
                [
                    "change",
                    "baseline",
                    "candidate",
                    "effect",
                    "interval",
                    "p (Bonferroni)",
                    "verdict",
                ]
            ]
            for finding in group.findings:
                rows.append(
                    [
                        _subject(finding),
                        _value(finding, finding.baseline),
                        _value(finding, finding.candidate),
                        _change(finding),
                        _interval(finding),
                        _p(finding),
                        _verdict(finding),
                    ]
                )
            table = _table(rows)
            lines.append("  " + _paint(table[0], "dim", color))
            for finding, line in zip(group.findings, table[1:], strict=True):
                colour = "red" if finding.tripped else "yellow" if finding.flagged else ""
                lines.append("  " + (_paint(line, colour, color) if colour else line))
        if group.layers:
            lines += ["  " + line for line in _table(_layer_rows(group.layers))]
        if group.evaluations:
            lines += ["  " + line for line in _table(_eval_rows(group.evaluations))]
        if group.paths:
            rows = [["paths: baseline", "candidate", "path"]]
            for share in group.paths:
                rows.append(
                    [
                        _share(share.baseline, b),
                        _share(share.candidate, c),
                        _path(share.path),
                    ]
                )
            lines += ["  " + line for line in _table(rows)]
        for divergence in group.divergences:
            lines.append(
                f"  diverges: {_path(divergence.candidate_path)}: {_divergence_text(divergence)}"
            )
    if comparison.flips:
        lines += ["", _paint(_flips_head(comparison), "bold", color)]
        lines += ["  " + line for line in _table(_flip_rows(comparison.flips))]
    if comparison.warnings:
        lines.append("")
        lines += [_paint(f"warning: {warning}", "yellow", color) for warning in comparison.warnings]
    return "\n".join(lines) + "\n"


def _share(count: int, runs: int) -> str:
    if not count:
        return "-"
    return f"{count / runs:.0%} ({count})" if runs else str(count)


def _outcome_lines(b: Side, c: Side) -> list[str]:
    rows = [["runs", "ok", "error", "cancelled", "incomplete", "paused", "p50 ms", "p95 ms",
             "tokens in/out", "model/tool calls"]]  # fmt: skip
    for name, side in (("baseline", b), ("candidate", c)):
        rows.append(
            [
                f"{name} {side.runs}",
                *(
                    str(side.outcomes.get(o, 0))
                    for o in ("ok", "error", "cancelled", "incomplete", "paused")
                ),
                _ms(side.latency_p50),
                _ms(side.latency_p95),
                f"{_ms(side.input_tokens)}/{_ms(side.output_tokens)}",
                f"{_ms(side.model_calls)}/{_ms(side.tool_calls)}",
            ]
        )
    return _table(rows)


# -- markdown ----------------------------------------------------------------------------------


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(comparison: Comparison) -> str:
    """The report for a pull-request comment or a CI job summary."""
    icon = {"regression": ":x:", "inconclusive": ":warning:"}.get(
        comparison.verdict, ":white_check_mark:"
    )
    lines = [
        f"## {icon} adk-otel compare: {headline(comparison)}",
        "",
        f"Baseline **{comparison.baseline_runs}** runs, candidate "
        f"**{comparison.candidate_runs}** runs; alpha {comparison.alpha:g}; gates: "
        f"{_rules_text(comparison)}.",
        "",
    ]
    if duplicates := _duplicates(comparison):
        lines += [duplicates[0].upper() + duplicates[1:] + ".", ""]
    if comparison.tripped:
        lines += ["**Tripped:**", ""]
        for f, subject in _tripped(comparison):
            lines.append(
                f"- `{f.gate}`: {_md(f.group)}: {_md(subject)} {_value(f, f.baseline)} → "
                f"{_value(f, f.candidate)} ({_change(f)} {_interval(f)}, p={_p(f)})"
            )
        lines.append("")
    for group in comparison.groups:
        b = group.baseline.runs if group.baseline else 0
        c = group.candidate.runs if group.candidate else 0
        lines += [f"### {_md(group.label)} ({b} vs {c} runs)", ""]
        if group.too_small:
            lines += [f"> {_small(group)}", ""]
        if group.findings:
            lines += [
                "| change | baseline | candidate | effect | interval | p (Bonferroni) | verdict |",
                "|---|---|---|---|---|---|---|",
            ]
            for f in group.findings:
                verdict = _verdict(f)
                if f.tripped:
                    verdict = f"**{verdict}**"
                lines.append(
                    f"| {_md(_subject(f))} | {_value(f, f.baseline)} | {_value(f, f.candidate)} | "
                    f"{_change(f)} | {_interval(f)} | {_p(f)} | {_md(verdict)} |"
                )
            lines.append("")
        if group.layers:
            rows = _layer_rows(group.layers)
            lines += [
                "| " + " | ".join(rows[0]) + " |",
                "|" + "---|" * len(rows[0]),
                *("| " + " | ".join(_md(cell) for cell in row) + " |" for row in rows[1:]),
                "",
            ]
        if group.evaluations:
            lines += _md_table(_eval_rows(group.evaluations))
        if group.paths:
            lines += ["| baseline | candidate | path |", "|---|---|---|"]
            for share in group.paths:
                lines.append(
                    f"| {_share(share.baseline, b)} | {_share(share.candidate, c)} | "
                    f"`{_md(_path(share.path))}` |"
                )
            lines.append("")
        for divergence in group.divergences:
            lines.append(
                f"- diverges: `{_md(_path(divergence.candidate_path))}`: "
                f"{_md(_divergence_text(divergence))}"
            )
        if group.divergences:
            lines.append("")
    if comparison.flips:
        lines += [f"### {_md(_flips_head(comparison))}", ""]
        rows = _flip_rows(comparison.flips)
        for row in rows[1:]:
            row[4:] = [f"`{cell}`" if cell != "-" else cell for cell in row[4:]]
        lines += _md_table(rows)
    if comparison.warnings:
        lines += ["**Warnings:**", ""] + [f"- {_md(w)}" for w in comparison.warnings] + [""]
    return "\n".join(lines)


def _md_table(rows: list[list[str]]) -> list[str]:
    return [
        "| " + " | ".join(rows[0]) + " |",
        "|" + "---|" * len(rows[0]),
        *("| " + " | ".join(_md(cell) for cell in row) + " |" for row in rows[1:]),
        "",
    ]


# -- summarize -----------------------------------------------------------------------------------


def _summary_head(summary: Summary, output: str | None) -> str:
    where = f" -> {output}" if output else ""
    return (
        f"adk-otel summarize: {summary.runs} runs in {len(summary.groups)} group(s) "
        f"from {summary.spans} spans{where}"
    )


def _summary_run_rows(summary: Summary) -> list[list[str]]:
    """One row per group: runs, how they ended, latency percentiles, tokens and
    calls per run (means), the most frequent failure categories."""
    rows = [
        [
            "group",
            "runs",
            "error rate",
            "other outcomes",
            "p50 ms",
            "p95 ms",
            "max ms",
            "tokens/run",
            "model calls/run",
            "tool calls/run",
            "failures (runs)",
        ]
    ]
    for key, group in summary.groups.items():
        errors = group.outcomes.get("error", 0)
        others = ", ".join(
            f"{count} {outcome}"
            for outcome, count in sorted(group.outcomes.items())
            if outcome not in ("ok", "error") and count
        )
        failures = ", ".join(
            f"{category} {count}" for category, count in group.error_runs.most_common(3)
        )
        if len(group.error_runs) > 3:
            failures += f", {len(group.error_runs) - 3} more"
        rows.append(
            [
                group_label(key),
                str(group.runs),
                _rate(errors / group.runs if group.runs else None),
                others or "-",
                _ms(group.latency_ms.quantile(0.5)),
                _ms(group.latency_ms.quantile(0.95)),
                _ms(group.latency_ms.quantile(1.0)),
                _ms(group.tokens.mean()),
                _ms(group.model_calls.mean()),
                _ms(group.tool_calls.mean()),
                failures or "-",
            ]
        )
    return rows


def _summary_eval_rows(summary: Summary) -> list[list[str]]:
    rows = [["group", "eval metric", "results", "passed", "failed", "pass rate", "mean score"]]
    for key, group in summary.groups.items():
        for name, metric in sorted(group.evaluations.items()):
            rows.append(
                [
                    group_label(key),
                    name,
                    str(metric.results),
                    str(metric.passed),
                    str(metric.failed),
                    _rate(metric.pass_rate),
                    _ms(metric.mean_score),
                ]
            )
    return rows


def _summary_notes(summary: Summary) -> list[str]:
    notes = []
    if summary.duplicate_spans:
        notes.append(
            f"{summary.duplicate_spans} duplicate spans dropped (same trace and span id, "
            "counted once)"
        )
    if summary.unattached_evaluations:
        notes.append(
            f"{summary.unattached_evaluations} eval case results without their run (no span "
            "context, or its invocation span not in the input): not counted"
        )
    return notes


def summary_json(summary: Summary, output: str | None = None) -> dict[str, Any]:
    """What ``summarize --format json`` prints (not the summary file: that is
    :mod:`.summary_file`)."""
    return {
        "version": 1,
        "output": output,
        "runs": summary.runs,
        "spans": summary.spans,
        "duplicate_spans": summary.duplicate_spans,
        "unattached_evaluations": summary.unattached_evaluations,
        "group_by": list(summary.group_by),
        "groups": [
            {
                "key": dict(key),
                "label": group_label(key),
                "runs": group.runs,
                "evaluations": [
                    {"metric": name, **(_metric_json(metric) or {})}
                    for name, metric in sorted(group.evaluations.items())
                ],
            }
            for key, group in summary.groups.items()
        ],
    }


def render_summary(summary: Summary, format: str = "text", output: str | None = None) -> str:
    """``summarize``'s report: the runs and groups read and, when the inputs
    carry evaluation results, per group and metric the case results, pass
    rate and mean score; ``text``, ``markdown`` or ``json``."""
    rows = _summary_eval_rows(summary)
    if format == "json":
        import json

        return json.dumps(summary_json(summary, output), indent=2) + "\n"
    runs = _summary_run_rows(summary)
    if format == "markdown":
        lines = [f"## {_summary_head(summary, output)}", ""]
        if len(runs) > 1:
            lines += _md_table(runs)
        if len(rows) > 1:
            lines += _md_table(rows)
        lines += [f"- {_md(note)}" for note in _summary_notes(summary)]
        return "\n".join(lines).rstrip("\n") + "\n"
    lines = [_summary_head(summary, output), *_summary_notes(summary)]
    if len(runs) > 1:
        lines += ["  " + line for line in _table(runs)]
    if len(rows) > 1:
        lines += ["  " + line for line in _table(rows)]
    return "\n".join(lines) + "\n"
