"""``adk-otel``: look at and check traces in collector trace files.

::

    adk-otel tree traces.jsonl                  # print the span tree(s)
    adk-otel tree traces.jsonl --normalized     # the snapshot form
    adk-otel tree out/ 'traces-*.json.zst' --service shop --format json
    adk-otel check traces.jsonl --expect spec.yaml
    adk-otel summarize traces/ -o baseline.summary.json
    adk-otel compare baseline.summary.json traces/ --fail-on any   # docs/compare.md
    adk-otel evalset traces/ --where outcome=error -o bad-runs.evalset.json  # ADK eval cases
    adk-otel load traces/ --into chdb:store/    # into an embedded ClickHouse store
    adk-otel compare chdb:store/ --baseline service.version=1.4 --candidate service.version=1.5
    adk-otel demo [ARGS...]                     # run the bundled demo app

``FILE`` is OTLP JSON as the OpenTelemetry Collector's ``file`` exporter (or
``adk_otel.traces.io.otlp_json.OtlpJsonFileExporter``) writes it; ``-`` reads stdin.
Also read: the exporter's ``format: proto`` (length-prefixed protobuf) and
``compression: zstd``, and gzip- or zstd-compressed files (recognized by
their bytes, not their names; zstd needs ``pip install 'adk-otel[zstd]'``
before Python 3.14). Give several FILEs, a directory (every file in it:
a rotated set) or a quoted glob pattern; their spans are merged into traces.
JSON Lines and protobuf are read as a stream (memory holds the spans kept).
ADK's eval set result files (what ``adk eval`` saves in the agent's
``.adk/eval_history/``) among the FILEs are told by their bytes and read as
evaluation results, each joined to the run with its ADK invocation id:
``tree`` prints the scores under their runs, ``summarize`` and ``compare``
count them (one JSON document a file, within ``--max-document-mb``).
Filters keep whole traces: ``--trace-id ID`` that trace; ``--service NAME``
every trace with a span of that service (the resource's service.name), all
its services' spans included. Repeat one to allow several values; given
both, both must hold. With ``--service``, files are read twice (first for
the trace ids), so memory still holds only the traces kept; stdin is read
once, its spans held until the end.
``--format json`` prints one JSON object (shape: docs/testing.md).
Reading is bounded, so no file can take unbounded memory or time (sizes in
MiB; each flag also has an ``ADK_OTEL_MAX_<NAME>_MB`` variable): one JSON
line or document ``--max-document-mb`` (default 64), one protobuf message
or inflated zstd frame ``--max-message-mb`` (64), what one gzip or zstd
file may inflate to ``--max-inflated-mb`` (4096), input read without a
single span ``--max-without-spans-mb`` (64), the spec ``--max-spec-mb`` (1).
Over a limit is unusable input. A FIFO or stdin with no writer blocks, as
any reader of a pipe does, until something writes to it or closes it.

Spec format (YAML; unknown keys are rejected, naming the key)::

    traces: 1                 # optional: exactly this many traces
    allow_unended: false      # optional: spans without an end time fail the check
    spans:                    # each entry must hold; all are checked
      - name: invocation shop         # exact span name, or name_matches: <regex>
        outcome: ok                   # ok | error | cancelled | incomplete
      - tool: lookup                  # shortcuts: invocation: <app>, agent: <name>,
        status: ERROR                 #   model: <name>, tool: <name>
        error: ValueError             # error.type, its class name or status message
        parent: invoke_agent root     # parent span's name (or a selector mapping)
        count: 1                      # exactly N (default: at least one)
      - kind: model                   # invocation | agent | model | tool
        span_kind: CLIENT             # OpenTelemetry span kind
        under: {agent: root}          # any ancestor
        attributes: {gen_ai.request.model: scripted-model}
      - name_matches: "^execute_tool delete"
        count: 0                      # must not happen
    tree:                     # the shape: one root (or a list of roots)
      name: invocation shop
      children:               # in start order; "..." allows anything there
        - name: invoke_agent root
          outcome: error
          children:
            - generate_content scripted-model   # a bare name: children unchecked
            - name: execute_tool lookup
              error: ValueError
            - "..."

Tree nodes take ``name``/``name_matches``, ``kind``, ``span_kind``,
``status``, ``outcome``, ``error``, ``attributes``, ``ended``, ``count``
(N in a row), ``children`` (``[]``: none) and ``ordered: false`` (children in
any order). Concurrent siblings inside an ordered list: ``- unordered: [a, b]``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..traces.evalsets.build import EvalSetError
from ..traces.evalsets.selection import SelectionError
from ..traces.expect import parse_tree, render_expected, tree_mismatch, unknown_key
from ..traces.io import eval_set_results, evaluations
from ..traces.io.files import expand, read_records, read_traces
from ..traces.io.limits import NAMES, ReadLimits, flag_name, over, parse_mib
from ..traces.io.model import Forest, SpanRecord, is_invocation
from ..traces.io.otlp_json import OtlpJsonError
from ..traces.query import SpanQuery, SpecError
from ..traces.render import render_normalized, render_tree
from ..traces.report_json import check_json, forest_json
from ..util import sanitize
from ..version import __version__
from . import compare, evalset, store

PROG = "adk-otel"
EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2

_TOP_KEYS = ("traces", "allow_unended", "spans", "tree")
_SELECTOR_KEYS = (
    "name",
    "name_matches",
    "kind",
    "span_kind",
    "invocation",
    "agent",
    "model",
    "tool",
    "status",
    "outcome",
    "error",
    "attributes",
    "parent",
    "under",
)
_SPAN_KEYS = (*_SELECTOR_KEYS, "count")


class UsageError(Exception):
    """Unusable input: reported as one line, exit code 2."""


# -- the spec ------------------------------------------------------------------


def _spec_loader() -> Any:
    """YAML's safe loader without aliases: a spec never needs them, and an
    alias can refer to itself or expand exponentially (a 600-byte "billion
    laughs" file takes minutes and gigabytes)."""
    import yaml

    class SpecLoader(yaml.SafeLoader):
        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()  # type: ignore[no-untyped-call]
                raise yaml.composer.ComposerError(
                    None, None, "aliases (*name) are not allowed in a spec", event.start_mark
                )
            return super().compose_node(parent, index)

    return SpecLoader


def load_spec(path: Path, limit: int | None = None) -> dict[str, Any]:
    """The spec at ``path``, at most ``limit`` bytes (default: the spec limit)."""
    import yaml

    limit = ReadLimits().spec if limit is None else limit
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
        if len(data) > limit:
            raise UsageError(over(str(path), "larger than allowed", "spec", limit))
        text = data.decode("utf-8")
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path}: cannot read the spec (not UTF-8 text)") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the spec ({exc.strerror or exc})") from None
    try:
        spec = yaml.load(text, Loader=_spec_loader())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "syntax error"
        raise UsageError(f"{path}: invalid YAML{where} ({problem})") from None
    except RecursionError:
        raise UsageError(f"{path}: nested too deeply to be a spec") from None
    except ValueError as exc:  # an integer longer than Python converts
        raise UsageError(f"{path}: not a spec ({str(exc).split(';', 1)[0]})") from None
    if spec is None:
        raise UsageError(f"{path}: the spec is empty")
    if not isinstance(spec, dict):
        raise UsageError(f"{path}: the spec must be a mapping with keys {', '.join(_TOP_KEYS)}")
    for key in spec:
        if key not in _TOP_KEYS:
            raise UsageError(str(unknown_key(key, _TOP_KEYS, str(path))))
    return spec


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise SpecError(f"{where}: expected a mapping; got {value!r}")
    return value


_QUERY_METHODS = {
    "name": "named",
    "name_matches": "matching",
    "kind": "kind",
    "span_kind": "span_kind",
    "invocation": "invocation",
    "agent": "agent",
    "model": "model",
    "tool": "tool",
    "status": "status",
    "outcome": "outcome",
    "error": "error",
}


def build_query(base: SpanQuery, selector: Mapping[str, Any], where: str) -> SpanQuery:
    """A :class:`SpanQuery` from one ``spans:`` entry (``count`` aside)."""
    query = base
    for key, value in selector.items():
        if key == "count":
            continue
        if key not in _SELECTOR_KEYS:
            raise unknown_key(key, _SPAN_KEYS, where)
        try:
            if key in _QUERY_METHODS:
                query = getattr(query, _QUERY_METHODS[key])(value)
            elif key == "attributes":
                for attr, expected in _mapping(value, f"{where}: attributes").items():
                    query = query.attr(str(attr), expected)
            else:
                other = (
                    base.named(value)
                    if isinstance(value, str)
                    else build_query(base, _mapping(value, f"{where}: {key}"), f"{where}: {key}")
                )
                query = query.children_of(other) if key == "parent" else query.under(other)
        except SpecError as exc:
            message = str(exc)
            raise SpecError(
                message if message.startswith(where) else f"{where}: {message}"
            ) from None
        except (re.error, TypeError) as exc:
            raise SpecError(f"{where}: {key}: {exc}") from None
    return query


def _whole_number(value: Any, what: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise SpecError(f"{what} must be a whole number >= 0; got {value!r}")


def _check_spans(base: SpanQuery, entries: Any) -> tuple[int, list[str]]:
    if not isinstance(entries, list):
        raise SpecError("spans: expected a list of span entries")
    failures: list[str] = []
    for index, entry in enumerate(entries):
        where = f"spans[{index}]"
        entry = _mapping(entry, where)
        count = entry.get("count")
        if count is not None:
            _whole_number(count, f"{where}: count")
        query = build_query(base, entry, where)
        found = query.all()
        ok = len(found) == count if count is not None else bool(found)
        if not ok:
            wanted = f"exactly {count}" if count is not None else "at least 1"
            failures.append(f"{where} ({query.description}): expected {wanted}, found {len(found)}")
    return len(entries), failures


def run_check(records: list[SpanRecord], spec: Mapping[str, Any]) -> tuple[int, list[str], str]:
    """Check ``records`` against ``spec``: (expectations, failures, report extra)."""
    forest = Forest(records)
    base = SpanQuery(forest)
    checked, failures = 0, []
    extra = ""
    traces = spec.get("traces")
    if traces is not None:
        _whole_number(traces, "traces")
        checked += 1
        found = len({record.trace_id for record in records})
        if found != traces:
            failures.append(f"traces: expected {traces}, found {found}")
    allow_unended = spec.get("allow_unended", False)
    if not isinstance(allow_unended, bool):
        raise SpecError(f"allow_unended must be true or false; got {allow_unended!r}")
    if not allow_unended:
        checked += 1
        unended = base.unended().all()
        if unended:
            names = ", ".join(repr(record.name) for record in unended)
            failures.append(f"{len(unended)} span(s) never ended: {names}")
    if "spans" in spec:
        count, span_failures = _check_spans(base, spec["spans"])
        checked += count
        failures += span_failures
    if "tree" in spec:
        expected = parse_tree(spec["tree"])
        checked += 1
        reason = tree_mismatch(forest, expected)
        if reason is not None:
            failures.append(f"tree: {reason}")
            extra = f"expected tree:\n{render_expected(expected)}\n\n"
    return checked, failures, extra


# -- commands ------------------------------------------------------------------


_TRACE_ID = re.compile(r"[0-9a-f]{32}")


def _read(args: argparse.Namespace, files: Sequence[str]) -> list[SpanRecord]:
    """The spans of ``files`` (the trace files among the FILEs), only the
    traces the filters keep."""
    trace_ids = {value.lower() for value in args.trace_id or ()}
    for value in trace_ids:
        if not _TRACE_ID.fullmatch(value):
            raise UsageError(f"--trace-id {value!r}: a trace id is 32 hex digits")
    services = set(args.service or ())
    limits = read_limits(args)
    stores = [name for name in files if store.is_store(name)]
    if stores:
        if len(files) > 1:
            raise UsageError(f"{stores[0]}: a store is read alone, not with other inputs")
        return store.records(stores[0], store.selection_of(args), limit=args.max_spans)
    chosen = store.file_selection(args)
    if chosen is not None:
        return _selected_runs(read_records(files, limits=limits), chosen, trace_ids, services)
    if not trace_ids and not services:
        return read_records(files, limits=limits)
    read = 0

    def keep(record: SpanRecord) -> bool:
        nonlocal read
        read += 1
        return (not trace_ids or record.trace_id in trace_ids) and (
            not services or record.service in services
        )

    if services:  # whole traces, as a trace search by service finds them
        records = read_traces(files, keep, trace_ids or None, limits=limits)
    else:
        records = read_records(files, keep, limits=limits)
    if not records:
        raise UsageError(f"no span matches {_filters(args)} ({read} spans read)")
    return records


def _selected_runs(
    records: list[SpanRecord],
    chosen: store.Selection,
    trace_ids: set[str],
    services: set[str],
) -> list[SpanRecord]:
    """The traces of the runs ``--where`` / ``--since`` / ``--until`` select,
    within ``--trace-id`` and ``--service``."""
    if services:
        served = {r.trace_id for r in records if r.service in services}
        records = [r for r in records if r.trace_id in served]
    if trace_ids:
        records = [r for r in records if r.trace_id in trace_ids]
    invocations = [r for r in records if is_invocation(r)]
    kept = {r.trace_id for r in invocations if chosen.matches(r)}
    if not kept:
        why = store.why_none_matched(invocations, chosen)
        raise UsageError(f"no run matches {chosen.text} ({why})")
    return [r for r in records if r.trace_id in kept]


def read_limits(args: argparse.Namespace) -> ReadLimits:
    """The environment's limits (``ADK_OTEL_MAX_*_MB``), then the flags'."""
    try:
        limits = ReadLimits.from_env()
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    given = {name: getattr(args, f"max_{name}_mb", None) for name in NAMES}
    return replace(limits, **{name: size for name, size in given.items() if size is not None})


def _filters(args: argparse.Namespace) -> str:
    given = [f"--trace-id {value}" for value in args.trace_id or ()]
    given += [f"--service {value}" for value in args.service or ()]
    return " ".join(given)


def _json(document: object) -> str:
    return json.dumps(document, ensure_ascii=False, indent=2) + "\n"


def cmd_tree(args: argparse.Namespace) -> tuple[int, str]:
    if args.normalized and args.format == "json":
        raise UsageError("--normalized is a text form; use it without --format json")
    files, result_files = _split_inputs(args.files)
    forest = Forest(_read(args, files))
    if args.format == "json":
        return EXIT_OK, _json(forest_json(forest))
    _say_duplicates(forest)
    if args.normalized:
        return EXIT_OK, render_normalized(forest)
    scores = evaluations.from_span_records(forest.records)
    if not any(store.is_store(name) for name in files):  # a store holds no log records
        scores += evaluations.read_files(expand(files))
    if result_files:
        from_adk = eval_set_results.join(
            eval_set_results.read(result_files, limits=read_limits(args)), forest.records
        )
        scores += from_adk
        _say_unjoined(sum(result.trace_id is None for result in from_adk), args)
    return EXIT_OK, render_tree(forest, color=use_colour(args.color), evaluations=scores) + "\n"


def _split_inputs(inputs: Sequence[str]) -> tuple[list[str], list[str]]:
    """Trace inputs and ADK's eval set result files; a store is a trace input."""
    if any(store.is_store(name) for name in inputs):
        return list(inputs), []
    files, results = eval_set_results.split_inputs(inputs)
    return list(files), list(results)


def _say_unjoined(count: int, args: argparse.Namespace) -> None:
    """One line on stderr: eval results whose run is not in the input (none
    is missed when filters left runs out on purpose)."""
    if count and not args.trace_id and not args.service and sys.stderr is not None:
        print(
            f"{PROG}: {count} eval results not shown: their runs (ADK invocation ids)"
            " are not in the traces read",
            file=sys.stderr,
        )


def _say_duplicates(forest: Forest) -> None:
    """One line on stderr (stdout stays the tree, comparable across exports)."""
    if forest.duplicates and sys.stderr is not None:
        print(
            f"{PROG}: {forest.duplicates} duplicate spans dropped "
            "(same trace and span id, counted once)",
            file=sys.stderr,
        )


def cmd_check(args: argparse.Namespace) -> tuple[int, str]:
    spec = load_spec(Path(args.expect), read_limits(args).spec)
    try:
        run_check([], spec)  # a malformed spec is reported whatever the traces hold
    except SpecError as exc:
        raise UsageError(f"{args.expect}: {exc}") from None
    files, _ = _split_inputs(args.files)  # check reads the spans only
    records = _read(args, files)
    checked, failures, extra = run_check(records, spec)
    forest = Forest(records)
    code = EXIT_FAILED if failures else EXIT_OK
    if args.format == "json":
        return code, _json(check_json(forest, checked, failures))
    summary = f"{len(forest)} spans in {len(forest.trace_ids())} trace(s)"
    if forest.duplicates:
        summary += f", {forest.duplicates} duplicate spans dropped"
    if not failures:
        return EXIT_OK, f"adk-otel check: OK ({checked} expectations, {summary})\n"
    lines = [f"adk-otel check: FAILED ({len(failures)} of {checked} expectations, {summary})"]
    lines += [f"  FAIL {failure}" for failure in failures]
    report = "\n".join(lines) + "\n\n" + extra
    tree = render_tree(forest, color=use_colour(args.color))
    return EXIT_FAILED, report + f"actual trace:\n{tree}\n"


def cmd_demo(argv: Sequence[str]) -> int:
    from . import demo

    try:
        return int(demo.main(list(argv)) or 0)
    except SystemExit as exc:  # --help, or a usage error already printed
        return exc.code if isinstance(exc.code, int) else EXIT_BAD_INPUT


def use_colour(flag: bool | None) -> bool:
    """``--color``/``--no-color`` if given; else FORCE_COLOR, NO_COLOR (see
    no-color.org), then whether stdout is a terminal."""
    if flag is not None:
        return flag
    if os.environ.get("FORCE_COLOR"):
        return True
    if os.environ.get("NO_COLOR"):
        return False
    return sys.stdout.isatty()


_FILE_HELP = (__doc__ or "").split("``FILE`` is", 1)[-1].split("Spec format", 1)[0]
_FILE_HELP = ("FILE is" + _FILE_HELP).replace("``", "").strip()
_TREE_EXIT = "Exit codes: 0 fine, 2 unusable input (one line on stderr)."
_CHECK_EXIT = (
    "Exit codes: 0 the check passed, 1 it failed (the actual tree and every failed\n"
    "expectation are printed), 2 unusable input (one line on stderr)."
)
_SPEC_HELP = "Spec format" + (__doc__ or "").split("Spec format", 1)[-1].replace("``", "").rstrip()


def _colour_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--color",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="colour the tree (default: on a terminal, unless NO_COLOR is set; "
        "FORCE_COLOR forces it)",
    )


def _input_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="trace file (OTLP JSON Lines or protobuf, maybe gzip/zstd), a directory, "
        "a quoted glob pattern, or - for stdin",
    )
    parser.add_argument(
        "--trace-id",
        action="append",
        metavar="ID",
        help="keep only this trace (32 hex digits; repeatable)",
    )
    parser.add_argument(
        "--service",
        action="append",
        metavar="NAME",
        help="keep every trace with a span of this service (resource service.name), "
        "whole; repeatable",
    )
    parser.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text (default) or one JSON object, for machines (shape: docs/testing.md)",
    )
    store.add_selection_arguments(parser)
    limit_arguments(parser, [name for name in NAMES if name != "spec"])


_LIMIT_HELP = {
    "document": "one JSON line or document",
    "message": "one protobuf message or inflated zstd frame",
    "inflated": "what one gzip or zstd file may inflate to",
    "without_spans": "input read without finding a span",
    "spec": "the YAML spec",
}


def limit_arguments(parser: argparse.ArgumentParser, names: Sequence[str]) -> None:
    """``--max-<name>-mb`` flags (see :class:`~adk_otel.traces.io.limits.ReadLimits`)."""
    defaults = ReadLimits()
    title = "limits (MiB; also ADK_OTEL_MAX_<NAME>_MB)"
    # One heading however many calls add limits to a parser (check: inputs, then spec).
    groups = [g for g in parser._action_groups if g.title == title]
    group = groups[0] if groups else parser.add_argument_group(title)
    for name in names:
        group.add_argument(
            flag_name(name),
            type=_mib_flag,
            metavar="MB",
            help=f"{_LIMIT_HELP[name]} (default {getattr(defaults, name) >> 20})",
        )


def _mib_flag(raw: str) -> int:
    """A ``--max-*-mb`` value, as bytes."""
    try:
        return parse_mib(raw, "limit")
    except ValueError:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a positive number of MiB") from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Look at and check adk-otel traces in collector trace files."
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    tree = commands.add_parser(
        "tree",
        help="print the span tree of collector trace files (OTLP JSON or protobuf)",
        description="Print the span tree of collector trace files: OTLP JSON Lines or\n"
        "protobuf, plain, gzip or zstd.",
        epilog=_FILE_HELP + "\n\n" + _TREE_EXIT,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _input_arguments(tree)
    tree.add_argument("--normalized", action="store_true", help="print the snapshot form")
    _colour_flag(tree)
    check = commands.add_parser(
        "check",
        help="check collector trace files against a YAML spec",
        description="Check collector trace files (OTLP JSON Lines or protobuf, plain, gzip\n"
        "or zstd) against a YAML spec.",
        epilog=_FILE_HELP + "\n\n" + _SPEC_HELP + "\n\n" + _CHECK_EXIT,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _input_arguments(check)
    check.add_argument("--expect", required=True, metavar="SPEC", help="YAML spec to check")
    limit_arguments(check, ["spec"])
    _colour_flag(check)
    compare.add_commands(
        commands, lambda parser: limit_arguments(parser, [n for n in NAMES if n != "spec"])
    )
    evalset.add_command(
        commands, lambda parser: limit_arguments(parser, [n for n in NAMES if n != "spec"])
    )
    store.add_load_command(
        commands, lambda parser: limit_arguments(parser, [n for n in NAMES if n != "spec"])
    )
    commands.add_parser("demo", help="run the demo app (arguments are passed on)")
    for command in commands.choices.values():  # a bad argument gets its command's usage
        command.set_defaults(command_parser=command)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    if sys.stdout is None:  # started with stdout closed (`>&-`)
        _error("stdout is closed, nowhere to write")
        return EXIT_BAD_INPUT
    if args_list[:1] == ["demo"]:
        try:
            return cmd_demo(args_list[1:])
        except BrokenPipeError:  # `adk-otel demo | head`
            _reader_gone()
            return 0
    try:
        parser = build_parser()
        args, extra = parser.parse_known_args(args_list)
        if extra:
            command_parser = getattr(args, "command_parser", parser)
            command_parser.error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as exc:  # --help, or a usage error already printed
        return int(exc.code or 0) if not isinstance(exc.code, str) else EXIT_BAD_INPUT
    # A store's client (clickhouse-connect) logs its failures too: the one line
    # this command prints for them says it all.
    quiet = logging.getLogger("clickhouse_connect")
    quiet.addHandler(logging.NullHandler())
    quiet.propagate = False
    try:
        code, output = _dispatch(args)
    except (
        UsageError,
        OtlpJsonError,
        SpecError,
        OSError,
        store.StoreError,
        store.SelectionError,
    ) as exc:
        _error(str(exc))
        return EXIT_BAD_INPUT
    except RecursionError:
        _error("the input is nested too deeply to process")
        return EXIT_BAD_INPUT
    except MemoryError:
        _error(
            "out of memory holding the traces; keep fewer (--trace-id, --service) or lower"
            " the reading limits (--max-document-mb, --max-message-mb)"
        )
        return EXIT_BAD_INPUT
    try:
        # A span name or value read from a file can hold a lone surrogate: escaped, not fatal.
        sys.stdout.write(sanitize.utf8(output))
        sys.stdout.flush()
    except BrokenPipeError:  # `adk-otel tree ... | head`
        _reader_gone()
    except OSError as exc:  # a full disk, a closed descriptor
        _error(f"cannot write the output ({exc.strerror or exc})")
        return EXIT_BAD_INPUT
    return code


def _dispatch(args: argparse.Namespace) -> tuple[int, str]:
    if args.command == "summarize":
        return compare.cmd_summarize(args, read_limits(args))
    if args.command == "compare":
        return compare.cmd_compare(args, use_colour(args.color), read_limits(args))
    if args.command == "load":
        return store.cmd_load(args, read_limits(args))
    if args.command == "evalset":
        try:
            return evalset.cmd_evalset(args, read_limits(args))
        except (EvalSetError, SelectionError) as exc:
            raise UsageError(str(exc)) from None
    return cmd_tree(args) if args.command == "tree" else cmd_check(args)


def _error(message: str) -> None:
    """One line on stderr, if there is a stderr (a line end in a file name
    or a quoted value is escaped: the message stays one line)."""
    if sys.stderr is not None:
        one_line = message.replace("\r", "\\r").replace("\n", "\\n")
        print(f"{PROG}: error: {one_line}", file=sys.stderr)


def _reader_gone() -> None:
    """Our stdout's reader has had enough (``| head``): send the rest, and the
    interpreter's final flush, nowhere instead of failing on it."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
