"""Regression gates over two sets of runs: what ``adk-otel compare`` and
``adk_otel.testing.compare`` run.

A side is trace files (anything ``adk-otel tree`` reads: files, a directory,
a glob, ``-``), a summary file written by ``adk-otel summarize``, a
:class:`~.runs.Summary`, or span records. Trace files are streamed: memory
holds per-run numbers while reading, then distributions per group.

::

    result = compare("baseline.summary.json", "traces/", fail_on=["errors", "tokens=+20%"])
    result.check()          # AssertionError with the whole report if a gate tripped
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..io import eval_set_results, evaluations
from ..io.files import expand, iter_records
from ..io.limits import ReadLimits
from ..io.model import SpanRecord, as_records, is_invocation
from ..io.otlp_json import OtlpJsonError
from . import summary_file
from .compare_report import comparison_json, headline, render_markdown, render_text
from .comparison import Comparison, parse_rules
from .comparison import compare as compare_summaries
from .runs import OutOfOrder, Summary, summarize

Source = str | Path | Summary | Iterable[Any]


class NoRunSelected(OtlpJsonError):
    """``runs`` accepted no run of the files (the caller says why)."""


def summarize_files(
    arguments: Sequence[str],
    group_by: Sequence[str] = (),
    *,
    limits: ReadLimits | None = None,
    runs: Callable[[SpanRecord], bool] | None = None,
) -> Summary:
    """The summary of every run in the trace files (streamed).

    Files are read first in export order (each run folded when its invocation
    span comes: memory for runs in flight only); files whose spans are not in
    that order are read once more, holding every run's numbers to the end.
    Stdin cannot be read twice, so it is read that second way from the start.
    Evaluation results are read too: the log records in the same files (OTLP
    JSON, as ``tree`` reads them), the span form in the spans, and ADK's eval
    set result files among the inputs (``adk eval``'s: read first, each within
    the document limit, and joined to their runs by invocation id).
    ``runs`` keeps the runs whose invocation span it accepts (the files are
    read once more, first, for their trace ids)."""
    source = " ".join(arguments)
    traces, result_files = eval_set_results.split_inputs(arguments)
    from_adk = eval_set_results.read(result_files, limits=limits)
    kept: set[str] | None = None
    if runs is not None:
        if "-" in traces:
            raise OtlpJsonError("--where on stdin: give the trace files (they are read twice)")
        kept = {
            r.trace_id for r in iter_records(traces, limits=limits) if is_invocation(r) and runs(r)
        }
        if not kept:
            raise NoRunSelected(f"{source}: no run selected")

    def records_of() -> Iterator[SpanRecord]:
        found = iter_records(traces, limits=limits)
        return found if kept is None else (r for r in found if r.trace_id in kept)

    if "-" not in traces:
        try:
            records = records_of()
            summary = summarize(
                records,
                group_by,
                source,
                in_order=True,
                evaluations=_log_results(traces),
                eval_set_results=from_adk,
            )
            return _with_runs(summary)
        except OutOfOrder:
            pass
    records = records_of()
    summary = summarize(
        records, group_by, source, evaluations=_log_results(traces), eval_set_results=from_adk
    )
    return _with_runs(summary)


def _log_results(arguments: Sequence[str]) -> Iterator[evaluations.EvaluationResult]:
    """The log-form evaluation results in the files, read when first asked
    for: after the spans, whose reader checks and bounds every file."""
    yield from evaluations.read_files(name for name in expand(arguments) if name != "-")


def _with_runs(summary: Summary) -> Summary:
    if not summary.runs:
        raise OtlpJsonError(
            f"{summary.source}: no invocation span in {summary.spans} spans "
            "(a run is one adk-otel invocation span)"
        )
    return summary


def load_side(
    source: Source,
    group_by: Sequence[str] | None = None,
    *,
    limits: ReadLimits | None = None,
) -> Summary:
    """One side as a summary. ``group_by`` None: a summary file's own grouping;
    ``limits``: the trace-file reading limits (:class:`~.limits.ReadLimits`)."""
    if isinstance(source, Summary):
        summary = source
    elif isinstance(source, str | Path):
        text = str(source)
        if summary_file.is_summary_file(text):
            summary = summary_file.load(text)
        else:
            return summarize_files([text], group_by or (), limits=limits)
    else:
        summary = summarize(as_records(source), group_by or (), source="<spans>")
    if group_by is not None and tuple(group_by) != summary.group_by:
        raise OtlpJsonError(
            f"{summary.source or 'summary'}: grouped by "
            f"{', '.join(summary.group_by) or 'app only'}, not by "
            f"{', '.join(group_by) or 'app only'}; summarize again with the same --group-by"
        )
    if not summary.runs:
        raise OtlpJsonError(f"{summary.source or 'summary'}: no runs in it")
    return summary


def load_sides(
    baseline: Source,
    candidate: Source,
    group_by: Sequence[str] | None = None,
    *,
    limits: ReadLimits | None = None,
) -> tuple[Summary, Summary]:
    """Both sides, grouped alike: a summary file's grouping applies to the other side."""
    if group_by is None:
        for source in (baseline, candidate):
            if isinstance(source, str | Path) and summary_file.is_summary_file(str(source)):
                group_by = summary_file.load(str(source)).group_by
                break
            if isinstance(source, Summary):
                group_by = source.group_by
                break
    if baseline == "-" and candidate == "-":
        raise OtlpJsonError("stdin can be one side only")
    return (
        load_side(baseline, group_by, limits=limits),
        load_side(candidate, group_by, limits=limits),
    )


@dataclass
class Regression:
    """A comparison and its reports. ``ok``: no gate tripped and every gate
    asked for was judged; ``exit_code``: 0, 1 (tripped) or 3 (inconclusive)."""

    comparison: Comparison

    @property
    def ok(self) -> bool:
        return self.comparison.ok

    @property
    def exit_code(self) -> int:
        return self.comparison.exit_code

    @property
    def tripped_gates(self) -> list[str]:
        return self.comparison.tripped_gates

    def report(self, format: str = "text", *, color: bool = False) -> str:
        """``text``, ``markdown`` or ``json``."""
        if format == "json":
            import json

            return json.dumps(comparison_json(self.comparison), indent=2) + "\n"
        if format == "markdown":
            return render_markdown(self.comparison)
        if format == "text":
            return render_text(self.comparison, color=color)
        raise ValueError(f"format {format!r}: use text, markdown or json")

    def check(self) -> None:
        """Raise AssertionError with the whole text report if a gate tripped or
        could not be judged (too few runs: a test that proves nothing fails)."""
        if not self.ok:
            raise AssertionError("\n" + self.report())

    def __str__(self) -> str:
        return self.report()

    def __repr__(self) -> str:
        # What pytest shows for a failed ``assert result.ok``: the verdict and the
        # gates; ``check()`` fails with the whole report.
        return f"<Regression: {headline(self.comparison)}>"


def compare(
    baseline: Source,
    candidate: Source,
    *,
    fail_on: Iterable[str] = ("any",),
    alpha: float = 0.05,
    group_by: Sequence[str] | None = None,
    limits: ReadLimits | None = None,
) -> Regression:
    """Compare two sides; ``fail_on`` as ``--fail-on`` (default: every gate);
    ``limits``: the trace-file reading limits (default: from the environment)."""
    rules = parse_rules(fail_on)
    base, cand = load_sides(baseline, candidate, group_by, limits=limits)
    return Regression(compare_summaries(base, cand, alpha=alpha, rules=rules))
