"""ClickHouse sources for the reading commands, and ``adk-otel load``.

::

    adk-otel load traces/ --into chdb:.adk-otel-store          # an embedded store
    adk-otel summarize chdb:.adk-otel-store --where service.version=1.4
    adk-otel compare clickhouse://ch:8123/otel --baseline service.version=1.4 \\
        --candidate service.version=1.5 --fail-on any
    adk-otel tree chdb:.adk-otel-store --trace-id 4bf92f3577b34da6a3ce929d0e0e4736

Guide: docs/compare.md ("Runs in ClickHouse").
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..traces.comparisons.runs import Summary
from ..traces.io.files import iter_records
from ..traces.io.limits import ReadLimits
from ..traces.io.model import SpanRecord
from ..traces.store import engine, spans
from ..traces.store.engine import StoreError, is_store
from ..traces.store.runs import summarize_sides, summarize_store, why_none_selected
from ..traces.store.selection import Selection, SelectionError, why_none_matched

__all__ = ["Selection", "SelectionError", "StoreError", "is_store", "why_none_matched"]


def add_selection_arguments(
    parser: argparse.ArgumentParser, *, where: bool = True, sides: bool = False
) -> None:
    """The flags that select runs in a store (pushed into its SQL); ``where``
    False: the command has its own --where, --since and --until."""
    group = parser.add_argument_group(
        "selecting runs in a ClickHouse store (clickhouse://HOST:PORT/DB or chdb:DIR)"
    )
    if where:
        _where_arguments(group)
    if sides:
        group.add_argument(
            "--baseline",
            dest="baseline_selection",
            metavar="KEY=VALUE[,...]",
            help="with one store: the baseline's runs (e.g. service.version=1.4, or "
            "since=...,until=...)",
        )
        group.add_argument(
            "--candidate",
            dest="candidate_selection",
            metavar="KEY=VALUE[,...]",
            help="with one store: the candidate's runs",
        )
    group.add_argument(
        "--max-spans",
        type=int,
        default=spans.MAX_SPANS,
        metavar="N",
        help=f"spans tree, check and evalset may read back (default {spans.MAX_SPANS})",
    )


def _where_arguments(group: Any) -> None:
    group.add_argument(
        "--where",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="the run's invocation span (else its resource) has this attribute value, e.g. "
        "service.version=1.5; repeatable",
    )
    group.add_argument("--since", metavar="TIME", help="runs started at or after TIME (ISO 8601)")
    group.add_argument("--until", metavar="TIME", help="runs started before TIME (ISO 8601)")


def selection_of(args: argparse.Namespace, *, where: bool = True) -> Selection:
    """The common selection: --where (``where`` False: the command's own, not
    a store's), --since, --until, --service, --trace-id."""
    return Selection.build(
        where=(getattr(args, "where", None) or ()) if where else (),
        services=getattr(args, "service", None) or (),
        since=getattr(args, "since", None),
        until=getattr(args, "until", None),
        trace_ids=getattr(args, "trace_id", None) or (),
    )


def file_selection(args: argparse.Namespace) -> Selection | None:
    """``--where``, ``--since`` and ``--until`` for trace files (None: not given):
    the store's language, checked on each run's invocation span as it is read."""
    where = getattr(args, "where", None) or ()
    since, until = getattr(args, "since", None), getattr(args, "until", None)
    if not (where or since or until):
        return None
    return Selection.build(where=where, since=since, until=until)


def summary(source: str, selection: Selection, group_by: Sequence[str]) -> Summary:
    """The selected runs of a store, summarized by its engine."""
    location = engine.parse(source)
    label = str(location) + (f" [{selection.text}]" if selection.text else "")
    with engine.open_store(location) as store:
        result = summarize_store(store, selection, group_by, source=label)
        if not result.runs:
            raise StoreError(f"{label}: no run selected ({why_none_selected(store, selection)})")
    return result


def summaries(
    source: str, selections: Sequence[Selection], group_by: Sequence[str]
) -> list[Summary]:
    """A summary per selection of one store's runs, from one scan."""
    location = engine.parse(source)
    labels = [str(location) + (f" [{s.text}]" if s.text else "") for s in selections]
    with engine.open_store(location) as store:
        results = summarize_sides(store, selections, group_by, sources=labels)
        for label, selection, result in zip(labels, selections, results, strict=True):
            if not result.runs:
                why = why_none_selected(store, selection)
                raise StoreError(f"{label}: no run selected ({why})")
    return results


def records(
    source: str, selection: Selection, *, condition: str = "1", limit: int
) -> list[SpanRecord]:
    """The spans of the traces of the selected runs in a store."""
    if limit < 1:
        raise StoreError(f"--max-spans {limit}: give a whole number >= 1")
    with engine.open_store(source) as store:
        table = spans.checked_table(store)
        found = spans.read_spans(store, table, condition, selection=selection, limit=limit)
        if not found:
            shown = f" matching {selection.text}" if selection.text else ""
            why = f" ({why_none_selected(store, selection)})" if selection.where else ""
            raise StoreError(f"{engine.parse(source)}: no span{shown}{why}")
    return found


def add_load_command(commands: Any, limit_arguments: Any) -> None:
    parser = commands.add_parser(
        "load",
        help="load trace files into a ClickHouse store (the Collector exporter's table)",
        description="Write the spans of trace files into the OpenTelemetry Collector "
        "ClickHouse exporter's otel_traces table: an embedded chDB store (a directory, made "
        "if missing) or a server. Then summarize, compare, tree, check and evalset read it.",
    )
    parser.add_argument(
        "files", nargs="+", metavar="FILE", help="trace files, a directory, a quoted glob, or -"
    )
    parser.add_argument(
        "--into",
        required=True,
        metavar="STORE",
        help="chdb:DIRECTORY (embedded) or clickhouse://HOST:PORT/DB (?table=NAME)",
    )
    limit_arguments(parser)


def cmd_load(args: argparse.Namespace, limits: ReadLimits) -> tuple[int, str]:
    """Every input is read through before anything is written, so unusable
    input leaves the store as it was (a new embedded store is not made)."""
    if not is_store(args.into):
        raise StoreError(f"--into {args.into}: give chdb:DIRECTORY or clickhouse://HOST:PORT/DB")
    held = list(iter_records(args.files, limits=limits)) if "-" in args.files else None
    seen = spans.IdTally()
    for record in held if held is not None else iter_records(args.files, limits=limits):
        seen.add(record)
    if not seen.spans:
        raise StoreError("no span in the input: nothing loaded")
    location = engine.parse(args.into)
    new = location.kind == "chdb" and not Path(location.path).exists()
    try:
        with engine.open_store(location, create=True) as store:
            again = held if held is not None else iter_records(args.files, limits=limits)
            written = spans.load(store, again)
            duplicates = spans.duplicate_count(store)
    except BaseException:
        if new:
            shutil.rmtree(location.path, ignore_errors=True)
        raise
    lines = [f"adk-otel load: {written} spans into {location.qualified} of {location}"]
    if duplicates:
        lines.append(
            f"  the store holds {duplicates} duplicate spans (same trace and span id: the "
            "same files loaded again?); every command counts each once"
        )
    if seen.repeated:
        _say(
            f"warning: {seen.repeated} spans reuse the trace and span id of a different "
            "span: their runs share trace ids, so later runs are dropped as duplicates. "
            "An app that seeds Python's random (random.seed) gets the same ids in every "
            "run: the OpenTelemetry SDK draws them from it. Seed a random.Random() of "
            "your own instead"
        )
    return 0, "\n".join(lines) + "\n"


def _say(note: str) -> None:
    if sys.stderr is not None:
        print(f"adk-otel: {note}", file=sys.stderr)
