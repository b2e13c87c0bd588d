"""``adk-otel evalset``: runs in trace files as an ADK eval set, from incident to test.

::

    adk-otel evalset otel-output/ --where outcome=error -o checkout.evalset.json
    adk-otel evalset traces.json --where failed_tool=charge_card --since 2026-03-01 --limit 5
    adk-otel evalset traces.json --trace-id 4bf92f3577b34da6a3ce929d0e0e4736 --per invocation

The inputs are what ``tree`` reads. The file is ADK's ``EvalSet``
(``adk eval``, ``AgentEvaluator``, ``LocalEvalService``): one case per
session, or per run with ``--per invocation``. Guide: docs/evaluations.md.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..traces.evalsets import build, selection
from ..traces.evalsets.runs import collect, wanted
from ..traces.io import eval_set_results
from ..traces.io.files import read_records
from ..traces.io.limits import ReadLimits
from ..traces.io.model import SpanRecord
from ..traces.io.otlp_json import OtlpJsonError
from . import store

_TRACE_ID = re.compile(r"[0-9a-f]{32}")
EPILOG = f"""Selection (--where KEY=VALUE, repeatable: a key again allows another value,
different keys must all hold):
{selection.help_text()}
--since / --until take an ISO 8601 date or time (UTC unless it says otherwise) and
select by the run's start. Per session (the default), a session with a selected
run becomes one case holding all its runs in the input, in order; --limit counts
cases, oldest first.

A run that did not end ok keeps the user's message and its tool calls up to the
failure but has no final_response: its case lists what to fill in under
adk_otel.todo (printed too). Runs captured without content are an error naming
the setting to turn on. Exit codes: 0 written, 2 unusable input or no run to
write (one line on stderr). Guide: docs/evaluations.md."""


def add_command(commands: Any, limit_arguments: Callable[[argparse.ArgumentParser], None]) -> None:
    """The subcommand, added to the CLI's subparsers."""
    parser = commands.add_parser(
        "evalset",
        help="write an ADK eval set from the runs in trace files (captured content)",
        description="Write an ADK EvalSet (adk eval, AgentEvaluator, LocalEvalService) from "
        "the runs in collector trace files: each run's user message, final response and tool "
        "calls, from content capture.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "files", nargs="+", metavar="FILE", help="trace files, a directory, a quoted glob, or -"
    )
    parser.add_argument(
        "-o", "--output", metavar="FILE", help="eval set file to write (without: stdout)"
    )
    parser.add_argument(
        "--where", action="append", default=[], metavar="KEY=VALUE", help="select runs (below)"
    )
    parser.add_argument("--since", metavar="TIME", help="runs started at or after TIME")
    parser.add_argument("--until", metavar="TIME", help="runs started before TIME")
    parser.add_argument(
        "--trace-id", action="append", metavar="ID", help="this trace's runs only (repeatable)"
    )
    parser.add_argument(
        "--service", action="append", metavar="NAME", help="runs of this service (repeatable)"
    )
    parser.add_argument("--limit", type=_positive, metavar="N", help="at most N cases")
    parser.add_argument(
        "--per",
        choices=("session", "invocation"),
        default="session",
        help="one case per session (default: multi-turn kept) or per run",
    )
    parser.add_argument(
        "--set-id", metavar="ID", help="the eval set id (default: from -o's name, else the app's)"
    )
    parser.add_argument("--description", metavar="TEXT", help="the eval set's description")
    store.add_selection_arguments(parser, where=False)
    limit_arguments(parser)


def _positive(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a whole number >= 1")
    return value


def cmd_evalset(args: argparse.Namespace, limits: ReadLimits) -> tuple[int, str]:
    """(exit code, stdout); unusable input raises ``ValueError`` (an
    :class:`~adk_otel.traces.evalsets.build.EvalSetError` or a selection's error)."""
    chosen = selection.parse(args.where, since=args.since, until=args.until)
    if args.set_id is not None and build.set_id_for(args.set_id) != args.set_id:
        raise build.EvalSetError(
            f"--set-id {args.set_id!r}: an eval set id is letters, digits and _ (as ADK asks)"
        )
    runs = collect(_read(args, limits))
    if not runs:
        raise build.EvalSetError("no ADK run in the input (no invocation span)")
    selected = [run for run in runs if chosen(run)]
    if not selected:
        given = chosen.description or "the filters"
        held = selection.values_present(runs, chosen)
        raise build.EvalSetError(
            f"no run matches {given} ({len(runs)} runs read{'; ' if held else ''}{held})"
        )
    groups = build.group(runs, selected, per_invocation=args.per == "invocation")
    cases = [build.case(runs_of_case) for runs_of_case in groups[: args.limit]]
    set_id = args.set_id or build.set_id_for(_default_name(args.output, cases))
    description = args.description or _description(cases, chosen.description)
    document = build.eval_set(cases, set_id=set_id, description=description)
    text = json.dumps(document, ensure_ascii=False, indent=2) + "\n"
    todo = [item for item in cases if item.todo]
    if not args.output:
        if todo:
            _say(f"{len(todo)} of {len(cases)} cases need a person: see their adk_otel.todo")
        return 0, text
    output = Path(args.output)
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise OtlpJsonError(f"{output}: cannot write ({exc.strerror or exc})") from None
    return 0, _report(cases, todo, len(selected), output)


def _read(args: argparse.Namespace, limits: ReadLimits) -> list[SpanRecord]:
    """The spans runs are built from, of the traces and services asked for
    (model-call spans, the bulk of captured content, are not kept)."""
    trace_ids = {value.lower() for value in args.trace_id or ()}
    for value in trace_ids:
        if not _TRACE_ID.fullmatch(value):
            raise build.EvalSetError(f"--trace-id {value!r}: a trace id is 32 hex digits")
    services = set(args.service or ())
    stores = [name for name in args.files if store.is_store(name)]
    if stores:
        if len(args.files) > 1:
            raise build.EvalSetError(f"{stores[0]}: a store is read alone, not with other inputs")
        # The run conditions (--where) are checked on the runs; the rest is SQL.
        kinds = ", ".join(f"'{kind}'" for kind in ("invocation", "agent", "tool", "node"))
        found = store.records(
            stores[0],
            store.selection_of(args, where=False),
            condition=f"SpanAttributes['adk.span.kind'] IN ({kinds}) OR "
            "SpanAttributes['gen_ai.operation.name'] = 'invoke_workflow'",
            limit=args.max_spans,
        )
        return [record for record in found if wanted(record)]
    files, _ = eval_set_results.split_inputs(args.files)

    def keep(record: SpanRecord) -> bool:
        return (
            wanted(record)
            and (not trace_ids or record.trace_id in trace_ids)
            and (not services or record.service in services)
        )

    return read_records(files, keep, limits=limits)


def _default_name(output: str | None, cases: list[build.Case]) -> str:
    if output:
        name = Path(output).name
        for suffix in (".evalset.json", ".test.json", ".json"):
            if name.endswith(suffix):
                return name[: -len(suffix)]
        return name
    apps = {run.app for item in cases for run in item.runs if run.app}
    return f"{apps.pop()}_from_traces" if len(apps) == 1 else "from_traces"


def _description(cases: list[build.Case], selected_by: str) -> str:
    runs = sum(len(item.runs) for item in cases)
    how = f", selected by {selected_by}" if selected_by else ""
    return f"{len(cases)} case(s) from {runs} traced run(s){how} (adk-otel evalset)"


def _report(cases: list[build.Case], todo: list[build.Case], selected: int, output: Path) -> str:
    invocations = sum(len(item.runs) for item in cases)
    lines = [
        f"adk-otel evalset: wrote {len(cases)} case(s), {invocations} invocation(s) "
        f"({selected} run(s) selected) to {output}"
    ]
    if todo:
        notes = len({note for item in todo for note in item.todo})
        lines.append(
            f"  {len(todo)} of {len(cases)} case(s) need a person before adk eval runs them: "
            f"{notes} kind(s) of note, each case's in its adk_otel.todo in {output} "
            f"(first: {todo[0].todo[0]})"
        )
    return "\n".join(lines) + "\n"


def _say(note: str) -> None:
    """A note on stderr (stdout is the eval set)."""
    if sys.stderr is not None:
        print(f"adk-otel: {note}", file=sys.stderr)
