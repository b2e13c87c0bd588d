"""``adk-otel summarize`` and ``adk-otel compare``: regression gates from traces.

::

    adk-otel summarize traces/ -o baseline.summary.json [--group-by ATTR]
    adk-otel summarize traces/ --format markdown          # eval results per metric, no file
    adk-otel compare baseline.summary.json traces/ --fail-on errors --fail-on tokens=+20%
    adk-otel compare main-traces/ pr-traces/ --fail-on eval --group-by adk.eval.case.id
    adk-otel compare main-traces/ pr-traces/ --fail-on any --format markdown

A side is anything ``tree`` reads (files, a directory, a quoted glob, ``-``
for stdin on one side; ADK's eval set result files among them, joined to
their runs by invocation id) or a summary file. Exit codes: 0 no gate tripped,
1 a gate tripped (the report says which and why), 2 unusable input.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..traces.comparisons import summary_file
from ..traces.comparisons.compare_report import render_summary
from ..traces.comparisons.regression import (
    NoRunSelected,
    Regression,
    Source,
    compare,
    summarize_files,
)
from ..traces.comparisons.runs import Summary
from ..traces.comparisons.summary_file import dumps
from ..traces.io.files import iter_records
from ..traces.io.limits import ReadLimits
from ..traces.io.model import is_invocation
from ..traces.io.otlp_json import OtlpJsonError
from . import store
from .store import Selection, StoreError, is_store

EPILOG = """Rules (--fail-on, repeatable):
  errors[=+N%]    an error rate up (runs, an error category, an agent/model/tool),
                  or a new error category or type (by more than N points; default 0)
  tokens=+N%      mean tokens per run (input + output) up by more than N% (default 10%)
  latency=+N%     median or p95 run latency up by more than N% (default 20%)
  calls=+N%       mean model or tool calls per run up by more than N% (default 10%)
  path[=N%]       the path distribution changed by more than N% of runs (default 10%)
  any             all of the above with their defaults
  eval[=-N%]      per evaluation metric, the case pass rate down by more than N
                  points or the mean score down by more than N% (default 0)
  eval:METRIC=-N% the same for one metric, with its own threshold
A change trips only when it is significantly beyond its threshold: a one-sided
test of the reported statistic at --alpha (Bonferroni within a gate) whose
interval's lower end clears the threshold. An improvement never trips.
Exit codes: 0 nothing tripped, 1 a gate tripped, 2 unusable input,
3 inconclusive (a gate asked for had too few runs to judge; the report says how
many it needs). Without --fail-on the report is shown and the exit code is 0.
Guide: docs/compare.md."""


def add_commands(commands: Any, limit_arguments: Callable[[argparse.ArgumentParser], None]) -> None:
    """The two subcommands, added to the CLI's subparsers; ``limit_arguments``
    adds the trace-file reading limits (``--max-*-mb``) to a parser."""
    summarize = commands.add_parser(
        "summarize",
        help="write a baseline summary of the runs in trace files",
        description="Write the per-group run distributions a later compare needs "
        "(no spans, ids or content): small, fit to commit. Shows the runs read and, "
        "when the inputs carry evaluation results, each metric's case pass rate and "
        "mean score per group.",
    )
    summarize.add_argument(
        "files", nargs="+", metavar="FILE", help="trace files, a directory, a quoted glob, or -"
    )
    summarize.add_argument(
        "-o", "--output", metavar="FILE", help="summary file to write (without: report only)"
    )
    summarize.add_argument(
        "--format", choices=("text", "markdown", "json"), default="text", help="report format"
    )
    _group_by(summarize)
    store.add_selection_arguments(summarize)
    limit_arguments(summarize)
    compare_parser = commands.add_parser(
        "compare",
        help="compare two sets of runs; gate CI on regressions",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    compare_parser.add_argument(
        "baseline", metavar="BASELINE", help="trace files, a summary, or a ClickHouse store"
    )
    compare_parser.add_argument(
        "candidate",
        metavar="CANDIDATE",
        nargs="?",
        help="trace files, a summary, or a store (without: BASELINE is a store, and "
        "--baseline and --candidate select each side's runs in it)",
    )
    compare_parser.add_argument(
        "--fail-on", action="append", default=[], metavar="RULE", help="a gate (see below)"
    )
    compare_parser.add_argument(
        "--alpha", type=float, default=0.05, help="significance level (default 0.05)"
    )
    compare_parser.add_argument(
        "--format", choices=("text", "markdown", "json"), default="text", help="report format"
    )
    _group_by(compare_parser)
    store.add_selection_arguments(compare_parser, sides=True)
    limit_arguments(compare_parser)
    compare_parser.add_argument(
        "--color",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="colour the report (default: on a terminal, unless NO_COLOR is set)",
    )


def _group_by(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--group-by",
        action="append",
        metavar="ATTRIBUTE",
        help="group runs per value of this span or resource attribute (e.g. a test case "
        "id, or gen_ai.conversation.id) as well as per app; repeatable",
    )


def cmd_summarize(args: argparse.Namespace, limits: ReadLimits) -> tuple[int, str]:
    stores = [name for name in args.files if is_store(name)]
    if stores and len(args.files) > 1:
        raise StoreError(f"{stores[0]}: a store is read alone, not with other inputs")
    if stores:
        summary = store.summary(stores[0], store.selection_of(args), args.group_by or ())
    else:
        summary = _summarized(args.files, store.file_selection(args), args.group_by, limits)
    if args.output:
        output = Path(args.output)
        try:
            output.write_text(dumps(summary), encoding="utf-8")
        except OSError as exc:
            raise OtlpJsonError(f"{output}: cannot write ({exc.strerror or exc})") from None
    return 0, render_summary(summary, args.format, args.output)


def _summarized(
    files: list[str],
    chosen: Selection | None,
    group_by: list[str] | None,
    limits: ReadLimits,
) -> Summary:
    """Trace files summarized, only the runs ``--where`` / ``--since`` /
    ``--until`` select (``chosen``; None: every run)."""
    if chosen is not None:
        for name in files:
            if summary_file.is_summary_file(name):
                raise StoreError(
                    f"{name}: a summary holds its runs already summarized; --where, --since "
                    "and --until select runs in trace files or a store"
                )
    runs = chosen.matches if chosen is not None else None
    try:
        return summarize_files(files, group_by or (), limits=limits, runs=runs)
    except NoRunSelected:
        assert chosen is not None
        invocations = (r for r in iter_records(files, limits=limits) if is_invocation(r))
        why = store.why_none_matched(invocations, chosen)
        raise StoreError(f"no run matches {chosen.text} ({why})") from None


def _no_selection(args: argparse.Namespace) -> None:
    """A store's own selections given without a store are a mistake, not ignored."""
    given = [
        flag
        for flag, value in (
            ("--baseline", getattr(args, "baseline_selection", None)),
            ("--candidate", getattr(args, "candidate_selection", None)),
        )
        if value
    ]
    if given:
        raise StoreError(f"{given[0]} selects runs in a ClickHouse store; no store was given")


def _sides(args: argparse.Namespace, limits: ReadLimits) -> tuple[Source, Source]:
    """Each side as compare takes it: a store's side summarized by its engine, a
    trace file's summarized here when ``--where`` / ``--since`` / ``--until``
    select its runs (the same language on both)."""
    baseline, candidate = args.baseline, args.candidate
    if candidate is None:
        if not is_store(baseline):
            raise StoreError(
                "give BASELINE and CANDIDATE (or one store and --baseline/--candidate)"
            )
        candidate = baseline
        if not (args.baseline_selection and args.candidate_selection):
            raise StoreError(
                f"{baseline}: comparing one store needs --baseline and --candidate selections"
            )
    on_files = store.file_selection(args)
    if not (is_store(baseline) or is_store(candidate)):
        _no_selection(args)
        if on_files is None:
            return baseline, candidate
        return (
            _summarized([baseline], on_files, args.group_by, limits),
            _summarized([candidate], on_files, args.group_by, limits),
        )
    group_by = args.group_by
    if group_by is None:
        for source in (baseline, candidate):
            if not is_store(source) and summary_file.is_summary_file(source):
                group_by = list(summary_file.load(source).group_by)
                break
    common = store.selection_of(args)
    if baseline == candidate:  # one store, two selections: one scan
        pair = [
            common.merged(Selection.parse(own)) if own else common
            for own in (args.baseline_selection, args.candidate_selection)
        ]
        base, cand = store.summaries(baseline, pair, group_by or ())
        args.group_by = group_by or []
        return base, cand
    sides: list[Source] = []
    for source, own in (
        (baseline, args.baseline_selection),
        (candidate, args.candidate_selection),
    ):
        if not is_store(source):
            selected = on_files is not None
            sides.append(_summarized([source], on_files, group_by, limits) if selected else source)
            continue
        chosen = common.merged(Selection.parse(own)) if own else common
        sides.append(store.summary(source, chosen, group_by or ()))
    args.group_by = group_by or []
    return sides[0], sides[1]


def cmd_compare(args: argparse.Namespace, color: bool, limits: ReadLimits) -> tuple[int, str]:
    baseline, candidate = _sides(args, limits)
    result: Regression = compare(
        baseline,
        candidate,
        fail_on=args.fail_on,
        alpha=args.alpha,
        group_by=args.group_by,
        limits=limits,
    )
    if args.format == "text":
        return result.exit_code, result.report("text", color=color)
    return result.exit_code, result.report(args.format)
