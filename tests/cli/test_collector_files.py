"""adk-otel tree/check on files as the collector's file exporter writes them,
built from real ADK runs exported over OTLP (see collector_files.py)."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.resources import Resource

from adk_otel import semconv as sc
from adk_otel.cli.main import main
from adk_otel.testing.receiver import OtlpReceiver
from adk_otel.traces.io.files import read_records
from adk_otel.traces.io.otlp_json import iter_text_documents

from .collector_files import (
    FORMATS,
    as_lines,
    file_bytes,
    json_messages,
    length_prefixed,
    logs_lines,
    proto_messages,
    write_rotated,
    zstd_frame,
)
from .conftest import Exported

SCHEMA = json.loads(
    (Path(__file__).parents[2] / "docs" / "cli-output.schema.json").read_text(encoding="utf-8")
)


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def by_key(records) -> dict:
    return {record.key: record for record in records}


def normalized(capsys, *argv: str) -> str:
    code, out, err = run_cli(capsys, "tree", "--normalized", *argv)
    assert (code, err) == (0, ""), err
    return out


@pytest.mark.parametrize("fmt", FORMATS)
def test_each_exporter_format_reads_back_every_span(exported: Exported, tmp_path, fmt) -> None:
    path = tmp_path / "traces.out"  # no telling extension: the bytes decide
    path.write_bytes(file_bytes(fmt, exported.requests))
    assert by_key(read_records([str(path)])) == by_key(exported.records)


def test_the_fixture_holds_several_exports_traces_and_services(exported: Exported) -> None:
    assert len(exported.requests) > 3, "one export per span: several messages per file"
    assert len({record.trace_id for record in exported.records}) == 3
    assert {record.service for record in exported.records} == {"shop", "billing"}


@pytest.mark.parametrize("fmt", ["json", "proto+zstd", "json.gz"])
def test_a_rotated_set_reads_as_a_directory_a_glob_or_several_files(
    capsys, exported: Exported, tmp_path, fmt
) -> None:
    whole = tmp_path / "whole.json"
    whole.write_bytes(file_bytes("json", exported.requests))
    expected = normalized(capsys, str(whole))
    paths = write_rotated(tmp_path / "out", "traces.json", fmt, exported.requests)
    assert len(paths) == 3 and all(path.stat().st_size for path in paths)
    (tmp_path / "out" / ".traces.json.swp").write_bytes(b"not a trace file")  # hidden: skipped
    assert normalized(capsys, str(tmp_path / "out")) == expected
    assert normalized(capsys, str(tmp_path / "out" / "traces*.json")) == expected
    assert normalized(capsys, *map(str, reversed(paths))) == expected
    # A file named twice (directory and file) is read once.
    assert normalized(capsys, str(tmp_path / "out"), str(paths[0])) == expected


def test_an_empty_current_file_after_rotation_is_fine_in_a_set(
    capsys, exported: Exported, tmp_path
) -> None:
    whole = tmp_path / "whole.json"
    whole.write_bytes(file_bytes("json", exported.requests))
    out = tmp_path / "out"
    write_rotated(out, "traces.json", "json", exported.requests)
    (out / "traces.json").rename(out / "traces-2026-11-24T09-10-00.000-size.json")
    (out / "traces.json").write_bytes(b"")
    assert normalized(capsys, str(out)) == normalized(capsys, str(whole))


def test_group_by_files_read_through_one_glob(capsys, exported: Exported, tmp_path) -> None:
    # group_by with path out/*/traces.json: one file per fileexporter.path_segment value.
    for service in ("shop", "billing"):
        mine = [r for r in exported.requests if _service(r) == service]
        (tmp_path / service).mkdir()
        (tmp_path / service / "traces.json").write_bytes(file_bytes("proto", mine))
    code, out, _ = run_cli(capsys, "tree", "--format", "json", str(tmp_path / "*" / "traces.json"))
    assert code == 0
    assert json.loads(out)["span_count"] == len(exported.records)


def _service(request) -> str:
    (resource_spans,) = request.resource_spans
    (name,) = [
        a.value.string_value for a in resource_spans.resource.attributes if a.key == "service.name"
    ]
    return name


def test_stdin_takes_compressed_and_protobuf_bytes(exported: Exported, tmp_path) -> None:
    data = gzip.compress(length_prefixed(proto_messages(exported.requests)))
    done = subprocess.run(
        [sys.executable, "-m", "adk_otel.cli", "tree", "--format", "json", "-"],
        input=data,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, b"")
    assert json.loads(done.stdout)["span_count"] == len(exported.records)


# -- filters ---------------------------------------------------------------------


def test_service_and_trace_id_filters(capsys, exported: Exported, tmp_path) -> None:
    path = tmp_path / "traces.json"
    path.write_bytes(file_bytes("json", exported.requests))
    code, out, _ = run_cli(capsys, "tree", "--format", "json", "--service", "billing", str(path))
    billing = [r for r in exported.records if r.service == "billing"]
    assert code == 0
    assert {span["span_id"] for t in json.loads(out)["traces"] for span in t["spans"]} == {
        r.span_id for r in billing
    }
    trace_id = sorted({r.trace_id for r in exported.records if r.service == "shop"})[0]
    code, out, _ = run_cli(
        capsys, "tree", "--format", "json", "--trace-id", trace_id.upper(), str(path)
    )
    document = json.loads(out)
    assert [t["trace_id"] for t in document["traces"]] == [trace_id]
    assert document["span_count"] == sum(r.trace_id == trace_id for r in exported.records)
    both = ("--service", "shop", "--service", "billing")
    code, out, _ = run_cli(capsys, "tree", "--format", "json", *both, str(path))
    assert json.loads(out)["span_count"] == len(exported.records)


def test_filters_in_check(capsys, exported: Exported, tmp_path) -> None:
    path = tmp_path / "traces.json"
    path.write_bytes(file_bytes("json", exported.requests))
    spec = tmp_path / "spec.yaml"
    spec.write_text("traces: 1\nspans:\n  - invocation: billing\n    count: 1\n")
    assert run_cli(capsys, "check", str(path), "--expect", str(spec))[0] == 1
    code, out, _ = run_cli(
        capsys, "check", str(path), "--expect", str(spec), "--service", "billing"
    )
    assert code == 0, out


def _traces_of(records, service: str) -> dict[str, set[str]]:
    """Span ids by trace, of every trace holding a span of ``service``."""
    wanted = {r.trace_id for r in records if r.service == service}
    traces: dict[str, set[str]] = {trace_id: set() for trace_id in wanted}
    for record in records:
        if record.trace_id in wanted:
            traces[record.trace_id].add(record.span_id)
    return traces


def _whole_traces(out: str) -> tuple[dict[str, set[str]], list[str]]:
    """(span ids by trace, the roots' names) of ``--format json`` output; no orphans."""
    document = json.loads(out)
    spans = [span for trace in document["traces"] for span in trace["spans"]]
    assert not [span["name"] for span in spans if span["orphan"]]
    traces = {t["trace_id"]: {span["span_id"] for span in t["spans"]} for t in document["traces"]}
    return traces, sorted(span["name"] for span in spans if span["depth"] == 0)


def test_the_crossing_fixture_has_a_trace_through_both_services(crossing: Exported) -> None:
    services: dict[str, set[str]] = {}
    for record in crossing.records:
        services.setdefault(record.trace_id, set()).add(record.service or "")
    assert sorted(map(sorted, services.values())) == [["billing"], ["billing", "shop"], ["shop"]]


@pytest.mark.parametrize("service", ["billing", "shop"])
def test_service_keeps_every_trace_it_is_in_whole(
    capsys, crossing: Exported, tmp_path, service
) -> None:
    path = tmp_path / "traces.json"
    path.write_bytes(file_bytes("json", crossing.requests))
    code, out, err = run_cli(capsys, "tree", "--format", "json", "--service", service, str(path))
    assert (code, err) == (0, "")
    traces, roots = _whole_traces(out)
    assert traces == _traces_of(crossing.records, service)
    # The crossing trace's root is shop's invocation, billing's invocation under it.
    assert roots == sorted(["invocation shop", f"invocation {service}"])


def test_service_with_trace_id_needs_both(capsys, crossing: Exported, tmp_path) -> None:
    path = tmp_path / "traces.json"
    path.write_bytes(file_bytes("proto.gz", crossing.requests))
    both = _traces_of(crossing.records, "billing").keys() & _traces_of(crossing.records, "shop")
    (crossed,) = both
    (shop_only,) = _traces_of(crossing.records, "shop").keys() - both
    args = ("tree", "--format", "json", str(path), "--service", "billing", "--trace-id")
    code, out, _ = run_cli(capsys, *args, crossed)
    assert code == 0
    traces, roots = _whole_traces(out)
    assert (traces, roots) == (
        {crossed: _traces_of(crossing.records, "shop")[crossed]},
        ["invocation shop"],
    )
    code, out, err = run_cli(capsys, *args, shop_only)
    assert (code, out) == (2, "")
    assert err == (
        f"adk-otel: error: no span matches --trace-id {shop_only} --service billing"
        f" ({len(crossing.records)} spans read)\n"
    )


def test_an_absent_service_is_one_line(capsys, crossing: Exported, tmp_path) -> None:
    paths = write_rotated(tmp_path / "out", "traces.json", "json", crossing.requests)
    code, out, err = run_cli(capsys, "tree", str(paths[0].parent), "--service", "nope")
    assert (code, out) == (2, "")
    assert err == (
        f"adk-otel: error: no span matches --service nope ({len(crossing.records)} spans read)\n"
    )


def test_service_on_stdin_and_files_keeps_whole_traces(crossing: Exported, tmp_path) -> None:
    # The crossing trace (exported first, one span per export) split: up to the
    # end of its billing spans on stdin (read once, held by trace), its later
    # shop spans and the other traces in a file (read twice): billing matches
    # only on stdin, the trace's root is only in the file.
    services = [_service(request) for request in crossing.requests]
    cut = services.index("shop", services.index("billing"))
    path = tmp_path / "traces.json"
    path.write_bytes(file_bytes("json", crossing.requests[cut:]))
    command = [sys.executable, "-m", "adk_otel.cli", "tree", "--format", "json"]
    done = subprocess.run(
        [*command, "--service", "billing", "-", str(path)],
        input=file_bytes("proto+zstd", crossing.requests[:cut]),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, b"")
    traces, roots = _whole_traces(done.stdout.decode())
    assert traces == _traces_of(crossing.records, "billing")
    assert roots == ["invocation billing", "invocation shop"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--trace-id", "abc"], "--trace-id 'abc': a trace id is 32 hex digits"),
        (["--service", "nope"], "no span matches --service nope ("),
        (["--trace-id", "0" * 32], f"no span matches --trace-id {'0' * 32} ("),
    ],
)
def test_filter_errors_are_one_line(capsys, exported: Exported, tmp_path, args, message) -> None:
    path = tmp_path / "traces.json"
    path.write_bytes(file_bytes("json", exported.requests))
    code, out, err = run_cli(capsys, "tree", str(path), *args)
    assert (code, out) == (2, "")
    assert err.startswith(f"adk-otel: error: {message}") and err.count("\n") == 1


# -- --format json -------------------------------------------------------------------


def test_tree_json_follows_the_schema_and_round_trips(capsys, exported: Exported, tmp_path) -> None:
    path = tmp_path / "traces.json"
    path.write_bytes(file_bytes("proto", exported.requests))
    code, out, _ = run_cli(capsys, "tree", "--format", "json", str(path))
    assert code == 0
    document = json.loads(out)
    jsonschema.validate(document, SCHEMA)
    spans = [span for trace in document["traces"] for span in trace["spans"]]
    assert document["span_count"] == len(spans) == len(exported.records)
    assert document["trace_count"] == len(document["traces"]) == 3
    expected = by_key(exported.records)
    for span in spans:
        record = expected[(span["trace_id"], span["span_id"])]
        assert (span["name"], span["parent_span_id"], span["status"]) == (
            record.name,
            record.parent_id,
            record.status_code,
        )
        assert span["attributes"] == json.loads(json.dumps(dict(record.attributes)))
        assert span["service"] == record.service
    depth_zero = [span for span in spans if span["depth"] == 0]
    assert [span["name"] for span in depth_zero] == ["invocation shop"] * 2 + ["invocation billing"]


def test_check_json_passes_and_fails(capsys, exported: Exported, tmp_path) -> None:
    path = tmp_path / "traces.json"
    path.write_bytes(file_bytes("json", exported.requests))
    spec = tmp_path / "spec.yaml"
    spec.write_text("spans:\n  - tool: lookup\n    count: 3\n")
    code, out, _ = run_cli(capsys, "check", str(path), "--expect", str(spec), "--format", "json")
    document = json.loads(out)
    jsonschema.validate(document, SCHEMA)
    assert (code, document["ok"], document["failures"]) == (0, True, [])
    assert document["expectations"] == 2  # the entry and "every span ended"
    spec.write_text("traces: 1\n")
    code, out, _ = run_cli(capsys, "check", str(path), "--expect", str(spec), "--format", "json")
    document = json.loads(out)
    jsonschema.validate(document, SCHEMA)
    assert (code, document["ok"], document["failures"]) == (
        1,
        False,
        ["traces: expected 1, found 3"],
    )
    assert document["span_count"] == len(exported.records)


def test_normalized_and_json_do_not_mix(capsys, collector_file) -> None:
    code, _, err = run_cli(capsys, "tree", "--normalized", "--format", "json", str(collector_file))
    assert (code, err.count("\n")) == (2, 1)
    assert "--normalized is a text form" in err


# -- hostile input -------------------------------------------------------------------


def _hostile(tmp_path: Path, requests) -> dict[str, tuple[list[str], str]]:
    json_line = as_lines(json_messages(requests[:1]))
    proto = proto_messages(requests[:1])[0]
    files = {
        "truncated.gz": gzip.compress(json_line)[:-12],
        "bad.zst": zstd_frame(json_line)[:4] + b"\x00not a zstd frame at all",
        "truncated.zst": zstd_frame(json_line * 50)[:-9],
        "bad-frame-in-message.bin": length_prefixed([zstd_frame(proto)[:4] + b"\xff" * 20]),
        "prefix-too-large.bin": (1 << 20).to_bytes(4, "big") + proto,
        "cut-prefix.bin": length_prefixed([proto]) + b"\x00\x00",
        "garbage-message.bin": length_prefixed([b"\xff\xff\xff\xff"]),
    }
    cases = {}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        cases[name] = ([str(tmp_path / name)], f"{tmp_path / name}: ")
    (tmp_path / "empty-dir").mkdir()
    cases["empty directory"] = (
        [str(tmp_path / "empty-dir")],
        f"{tmp_path / 'empty-dir'}: an empty directory, no trace files in it",
    )
    pattern = str(tmp_path / "nothing-*.json")
    cases["glob matching nothing"] = ([pattern], f"{pattern}: no file matches this pattern")
    return cases


HOSTILE_MESSAGES = {
    "truncated.gz": "truncated or corrupt gzip data (Compressed file ended",
    "bad.zst": "truncated or corrupt zstd data (",
    "truncated.zst": "truncated or corrupt zstd data (",
    "bad-frame-in-message.bin": "message 1: truncated or corrupt zstd data (",
    "prefix-too-large.bin": "message 1: the length prefix says 1048576 bytes but only",
    "cut-prefix.bin": "message 2: truncated (a length prefix of 2 bytes)",
    "garbage-message.bin": "message 1: not OTLP protobuf traces",
    "empty directory": "",
    "glob matching nothing": "",
}


@pytest.mark.parametrize("case", sorted(HOSTILE_MESSAGES))
def test_hostile_input_is_one_line_and_exit_2(
    capsys, exported: Exported, tmp_path, shop_spec, case
) -> None:
    files, prefix = _hostile(tmp_path, exported.requests)[case]
    for argv in (["tree", *files], ["check", *files, "--expect", str(shop_spec)]):
        code, out, err = run_cli(capsys, *argv)
        assert (code, out) == (2, "")
        assert err.startswith(f"adk-otel: error: {prefix}{HOSTILE_MESSAGES[case]}"), err
        assert err.count("\n") == 1


def test_zstd_without_its_package_names_the_install_command(
    capsys, monkeypatch, exported: Exported, tmp_path
) -> None:
    path = tmp_path / "traces.json.zst"
    path.write_bytes(file_bytes("json+native-zstd", exported.requests))
    monkeypatch.setitem(sys.modules, "zstandard", None)
    monkeypatch.setitem(sys.modules, "compression", None)  # Python 3.14's compression.zstd
    code, out, err = run_cli(capsys, "tree", str(path))
    assert (code, out) == (2, "")
    assert err == (
        f"adk-otel: error: {path}: zstd-compressed; reading it needs zstd support: "
        "pip install 'adk-otel[zstd]'\n"
    )


# -- streaming -----------------------------------------------------------------------


def test_json_lines_are_read_one_at_a_time(exported: Exported) -> None:
    """Each document is handed on before the next line is read: memory holds
    one line, not the file."""
    consumed: list[int] = []

    def lines():
        for number, line in enumerate(as_lines(json_messages(exported.requests)).splitlines(True)):
            consumed.append(number)
            yield line

    documents = iter_text_documents(lines(), "in.jsonl")
    for count in range(1, len(exported.requests) + 1):
        next(documents)
        assert len(consumed) == count


def test_help_names_the_inputs_filters_and_json_output(capsys) -> None:
    for command in ("tree", "check"):
        assert main([command, "--help"]) == 0
        out = capsys.readouterr().out
        for text in ("--trace-id ID", "--service NAME", "--format {text,json}", "format: proto"):
            assert text in out, (command, text)
        assert "pip install 'adk-otel[zstd]'" in out
        assert "a directory" in out and "glob" in out


# -- the stack's logs file beside its traces file --------------------------------------


def _stack_files() -> tuple[str, str]:
    """The file names the stack's collector writes traces and logs to, in the
    one bind-mounted folder (checked against compose in tests/stack)."""
    config = yaml.safe_load(
        (Path(__file__).parents[2] / "collector-config" / "otel-collector.yaml").read_text()
    )
    pipelines, exporters = config["service"]["pipelines"], config["exporters"]

    def file_path(pipeline: str) -> Path:
        (name,) = [e for e in pipelines[pipeline]["exporters"] if e.split("/")[0] == "file"]
        assert exporters[name].get("format", "json") == "json"
        return Path(exporters[name]["path"])

    traces, logs = file_path("traces/file"), file_path("logs")
    assert traces.parent == logs.parent and traces != logs
    return traces.name, logs.name


def _scores_exported(exported: Exported, receiver: OtlpReceiver, padding: int = 0) -> None:
    """A ``gen_ai.evaluation.result`` log record for each shop run, in its
    invocation span's context, exported by the SDK over OTLP/HTTP as adk-otel
    sends one (``padding``: that many more records of another event each)."""
    provider = LoggerProvider(resource=Resource.create({"service.name": "shop"}))
    base = receiver.http_endpoint.rsplit("/v1/", 1)[0]
    provider.add_log_record_processor(
        BatchLogRecordProcessor(OTLPLogExporter(endpoint=f"{base}/v1/logs", timeout=5))
    )
    logger = provider.get_logger(sc.INSTRUMENTATION_SCOPE)
    runs = [r for r in exported.records if r.adk_kind == "invocation" and r.service == "shop"]
    for number, run in enumerate(runs):
        context = trace.set_span_in_context(
            trace.NonRecordingSpan(
                trace.SpanContext(int(run.trace_id, 16), int(run.span_id, 16), is_remote=False)
            )
        )
        attributes = {
            sc.GEN_AI_EVALUATION_NAME: "response_match_score",
            sc.GEN_AI_EVALUATION_SCORE_VALUE: 1.0 - number / 2,
            sc.GEN_AI_EVALUATION_SCORE_LABEL: "pass" if number == 0 else "fail",
            sc.ADK_EVAL_SCOPE: "case",
            sc.ADK_EVAL_CASE_ID: f"case-{number}",
        }
        logger.emit(
            context=context, event_name=sc.GEN_AI_EVALUATION_RESULT_EVENT, attributes=attributes
        )
        for _ in range(padding):
            logger.emit(context=context, event_name="other", body="x" * 1000)
    provider.shutdown()


@pytest.fixture(scope="module")
def stack_output(exported: Exported, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The stack's output folder after two shop runs and their scores: the
    traces file and, beside it, the logs file, named as the collector config
    names them (plus 1.5 MiB of other log records, to read past)."""
    folder = tmp_path_factory.mktemp("otel-output")
    traces_name, logs_name = _stack_files()
    (folder / traces_name).write_bytes(file_bytes("json", exported.requests))
    with OtlpReceiver() as receiver:
        _scores_exported(exported, receiver, padding=750)
        (folder / logs_name).write_bytes(logs_lines(receiver.log_requests))
    return folder


def test_the_cli_reads_the_stacks_logs_file_beside_its_traces(capsys, stack_output) -> None:
    code, out, err = run_cli(capsys, "tree", str(stack_output), "--no-color")
    assert (code, err) == (0, "")
    scores = [line.strip("│ ") for line in out.splitlines() if "score " in line]
    assert sorted(scores) == [
        "score response_match_score 0.5 fail (case of case-1)",
        "score response_match_score 1 pass (case of case-0)",
    ]
    code, out, err = run_cli(capsys, "summarize", str(stack_output), "--format", "json")
    assert (code, err) == (0, "")
    (shop,) = [g for g in json.loads(out)["groups"] if g["label"] == "shop"]
    (metric,) = shop["evaluations"]
    assert (metric["passed"], metric["failed"]) == (1, 1)


def test_a_logs_file_of_any_size_is_data_not_input_without_spans(
    capsys, stack_output, tmp_path
) -> None:
    """The limit on input without a span is for blank space and empty
    documents; a logs file's records are another signal's data, read past."""
    _, logs_name = _stack_files()
    assert (stack_output / logs_name).stat().st_size > 1 << 20
    code, out, err = run_cli(
        capsys, "summarize", str(stack_output), "--format", "json", "--max-without-spans-mb", "1"
    )
    assert (code, err) == (0, "")
    (shop,) = [g for g in json.loads(out)["groups"] if g["label"] == "shop"]
    assert shop["evaluations"][0]["results"] == 2
    # Empty log documents, padded, still count against it.
    padded = tmp_path / "padded"
    shutil.copytree(stack_output, padded)
    line = b'{"resourceLogs": [], "padding": "' + b"p" * 4000 + b'"}\n'
    (padded / logs_name).write_bytes(line * 400)
    code, _, err = run_cli(capsys, "summarize", str(padded), "--max-without-spans-mb", "1")
    assert code == 2
    assert "no span in more than 1 MiB of input from the start" in err
