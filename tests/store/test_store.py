"""The reading commands over the Collector ClickHouse exporter's table, on the
real chDB engine: the engine's figures equal the file path's on the same runs,
selections are SQL, and a store that cannot be used is one line, exit 2."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path

import pytest
from compare.synth import Shape, otlp_line, runs

from adk_otel import semconv as sc
from adk_otel.cli import main
from adk_otel.traces.comparisons.runs import Summary, summarize
from adk_otel.traces.comparisons.summary_file import to_json
from adk_otel.traces.io.model import SpanEvent, SpanRecord
from adk_otel.traces.store import engine, schema, spans
from adk_otel.traces.store.runs import summarize_store
from adk_otel.traces.store.selection import Selection

DATA = Path(__file__).parents[1] / "cli" / "data"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def with_resource(records: list[SpanRecord], **resource: str) -> list[SpanRecord]:
    return [replace(r, resource={"service.name": "shop", **resource}) for r in records]


def evaluated(records: list[SpanRecord], metric: str, label: str) -> list[SpanRecord]:
    """An ``evaluate`` span (the span form of eval results) under each run."""
    out = []
    for index, inv in enumerate(
        r for r in records if r.attributes.get(sc.ADK_SPAN_KIND) == "invocation"
    ):
        out.append(
            replace(
                inv,
                span_id=f"{index + 1:016x}",
                parent_id=inv.span_id,
                name="evaluate c",
                attributes={sc.ADK_EVAL_CASE_ID: f"c{index}"},
                events=(
                    SpanEvent(
                        sc.GEN_AI_EVALUATION_RESULT_EVENT,
                        inv.end_ns or 0,
                        {
                            sc.GEN_AI_EVALUATION_NAME: metric,
                            sc.GEN_AI_EVALUATION_SCORE_VALUE: 0.25 + (index % 3) / 4,
                            sc.GEN_AI_EVALUATION_SCORE_LABEL: label if index % 4 else "fail",
                            sc.ADK_EVAL_SCOPE: "case",
                        },
                    ),
                ),
            )
        )
    return [*records, *out]


def normalized(summary: Summary) -> dict[str, object]:
    """The summary file's content, orders that carry no meaning sorted away
    (and the span count: a store counts the runs' spans, files every span)."""
    document = to_json(summary)
    document.pop("spans")
    for group in document["groups"]:
        group["layers"] = sorted(group["layers"], key=lambda layer: (layer["kind"], layer["name"]))
        group["paths"] = sorted(group["paths"])
    document["groups"] = sorted(document["groups"], key=lambda g: json.dumps(g["key"]))
    return document


def mixed_runs(seed: int) -> list[SpanRecord]:
    """Two apps, errors, an extra tool call, eval results and spans exported twice."""
    rng = random.Random(seed)
    records = runs(rng, 150, Shape(error_rate=0.2, conversation=True))
    records += runs(rng, 60, Shape(app="other", extra_tool_call=True, token_scale=2))
    records += runs(rng, 20, Shape(latency_ms=120.0))  # kept exact below 128, not on the grid
    records = evaluated(records, "match", "pass")
    return with_resource(records + records[:40], **{"service.version": "1.4"})


@pytest.fixture
def store(tmp_path: Path) -> str:
    return f"chdb:{tmp_path / 'store'}"


def load(source: str, records: list[SpanRecord]) -> None:
    with engine.open_store(source, create=True) as opened:
        assert spans.load(opened, records) == len(records)


def test_the_engine_summarizes_the_runs_as_the_file_path_does(store: str) -> None:
    records = mixed_runs(7)
    load(store, records)
    for group_by in ((), ("service.version", "gen_ai.conversation.id")):
        from_files = summarize(records, group_by)
        with engine.open_store(store) as opened:
            from_store = summarize_store(opened, Selection(), group_by)
        assert from_files.runs == 230
        assert from_store.duplicate_spans == from_files.duplicate_spans == 40
        assert sum(g.evaluations["match"].results for g in from_store.groups.values()) == 230
        assert normalized(from_store) == normalized(from_files)


def test_usage_a_client_instrumentation_records_is_counted_as_the_file_path_counts_it(
    store: str,
) -> None:
    """A model span whose inference a client instrumentation records carries its usage as
    ``adk.usage.*``: the engine counts it, as the file path does, and as much as before."""
    records = mixed_runs(11)
    moved = sc.ROLLUP_USAGE
    deferred = [
        replace(r, attributes={moved.get(k, k): v for k, v in r.attributes.items()})
        if r.attributes.get(sc.ADK_SPAN_KIND) == "model" and index % 2
        else r
        for index, r in enumerate(records)
    ]
    assert deferred != records
    load(store, deferred)
    with engine.open_store(store) as opened:
        from_store = summarize_store(opened, Selection(), ())
    assert normalized(from_store) == normalized(summarize(deferred, ()))
    assert normalized(from_store) == normalized(summarize(records, ()))


PDATA_STATUS = {"UNSET": "Unset", "OK": "Ok", "ERROR": "Error"}


def load_short_names(source: str, records: list[SpanRecord]) -> None:
    """The rows as a Collector writing pdata's short names stores them (``Error``,
    ``Internal``, not ``STATUS_CODE_ERROR``, ``SPAN_KIND_INTERNAL``)."""
    with engine.open_store(source, create=True) as opened:
        table = spans.create_table(opened)
        lines = []
        for record in records:
            row = json.loads(spans.row_json(record))
            row["StatusCode"] = PDATA_STATUS[record.status_code]
            row["SpanKind"] = record.kind.title()
            lines.append(json.dumps(row))
        opened.insert_json(table, lines)


def test_the_collectors_short_status_and_kind_names_are_read(store: str) -> None:
    """The schema reads pdata's short names too: an ``Error`` row is an error to the
    engine's figures and to the spans read back, on spans without ``adk.outcome`` (another
    instrumentation's, an older adk-otel's) where the status alone says it."""
    records = [
        replace(
            r,
            status_code="UNSET" if index % 7 == 0 and r.status_code == "OK" else r.status_code,
            attributes={k: v for k, v in r.attributes.items() if k != sc.ADK_OUTCOME},
        )
        for index, r in enumerate(mixed_runs(13))
    ]
    assert {r.status_code for r in records} == {"UNSET", "OK", "ERROR"}
    load_short_names(store, records)
    with engine.open_store(store) as opened:
        from_store = summarize_store(opened, Selection(), ())
        read = spans.read_spans(opened, spans.checked_table(opened))
    from_files = summarize(records, ())
    assert sum(g.outcomes["error"] for g in from_files.groups.values()) > 0
    assert normalized(from_store) == normalized(from_files)
    assert sorted((r.span_id, r.status_code, r.kind) for r in read) == sorted(
        (r.span_id, r.status_code, r.kind) for r in records
    )


def write(path: Path, records: list[SpanRecord], **resource: str) -> Path:
    with open(path, "w", encoding="utf-8") as handle:
        for start in range(0, len(records), 100):
            document = json.loads(otlp_line(records[start : start + 100]))
            attributes = document["resourceSpans"][0]["resource"]["attributes"]
            attributes += [{"key": k, "value": {"stringValue": v}} for k, v in resource.items()]
            handle.write(json.dumps(document) + "\n")
    return path


def strip_sources(report: str) -> str:
    return "\n".join(
        line for line in report.splitlines() if not line.startswith(("baseline:", "candidate:"))
    )


def test_compare_on_one_store_gives_the_files_verdicts(tmp_path: Path, store: str, capsys) -> None:
    base = runs(random.Random(1), 300, Shape())
    cand = runs(
        random.Random(2), 300, Shape(error_rate=0.15, token_scale=1.3, extra_tool_call=True)
    )
    base_file = write(tmp_path / "base.jsonl", base, **{"service.version": "1.4"})
    cand_file = write(tmp_path / "cand.jsonl", cand, **{"service.version": "1.5"})
    assert run(capsys, "load", str(base_file), str(cand_file), "--into", store)[0] == 0
    for fmt in ("text", "json"):
        code, files_report, _ = run(
            capsys, "compare", str(base_file), str(cand_file), "--fail-on", "any", "--format", fmt
        )
        assert code == 1
        store_code, store_report, err = run(
            capsys,
            "compare",
            store,
            "--baseline",
            "service.version=1.4",
            "--candidate",
            "service.version=1.5",
            "--fail-on",
            "any",
            "--format",
            fmt,
        )
        assert (store_code, err) == (1, "")
        if fmt == "json":
            a, b = json.loads(files_report), json.loads(store_report)
            for document in (a, b):
                document["baseline"].pop("source"), document["candidate"].pop("source")
            assert a["tripped_gates"] == ["calls", "errors", "tokens"]
            assert a == b
        else:
            assert strip_sources(store_report) == strip_sources(files_report)
            assert "errors" in store_report and "tokens" in store_report


def test_selections_are_pushed_into_the_query(store: str) -> None:
    early = with_resource(runs(random.Random(3), 20, Shape()), **{"service.version": "1"})
    late = [
        replace(r, start_ns=r.start_ns + 86_400 * 10**9, end_ns=(r.end_ns or 0) + 86_400 * 10**9)
        for r in with_resource(runs(random.Random(4), 30, Shape()), **{"service.version": "2"})
    ]
    load(store, early + late)
    with engine.open_store(store) as opened:

        def count(selection: Selection) -> int:
            return summarize_store(opened, selection).runs

        assert count(Selection()) == 50
        assert count(Selection.parse("service.version=2")) == 30
        assert count(Selection.parse("service.version=1,service.version=2")) == 50
        assert count(Selection.parse("until=2023-11-15")) == 20
        assert count(Selection.parse("since=2023-11-15")) == 30
        # every early run starts at 1,700,000,000 s exactly: since is inclusive, until is not
        assert count(Selection.parse("since=2023-11-14T22:13:20+00:00")) == 50
        assert count(Selection.parse("until=2023-11-14T22:13:20+00:00")) == 0
        assert count(Selection.build(services=["elsewhere"])) == 0
        trace = early[0].trace_id
        assert count(Selection.build(trace_ids=[trace])) == 1


def test_tree_and_check_read_a_store_as_the_file(tmp_path: Path, store: str, capsys) -> None:
    traces = DATA / "collector_shop.jsonl"
    assert run(capsys, "load", str(traces), "--into", store)[0] == 0
    for argv in (
        ["tree"],
        ["tree", "--normalized"],
        ["check", "--expect", str(DATA / "shop_spec.yaml")],
    ):
        from_file = run(capsys, *argv[:1], str(traces), *argv[1:], "--no-color")
        from_store = run(capsys, *argv[:1], store, *argv[1:], "--no-color")
        assert from_store == from_file
        assert from_file[1].strip()


def test_more_spans_than_the_bound_is_one_line(store: str, capsys) -> None:
    load(store, runs(random.Random(5), 10, Shape()))
    code, out, err = run(capsys, "tree", store, "--max-spans", "20")
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and "more than 20 spans" in err


def test_a_missing_table_or_another_schema_is_refused(tmp_path: Path, capsys) -> None:
    source = f"chdb:{tmp_path / 's'}"
    with engine.open_store(source, create=True) as opened:
        opened.command(
            "CREATE TABLE default.otel_traces (TraceId String, Duration Int64) "
            "ENGINE = MergeTree ORDER BY TraceId"
        )
        ddl = schema.CREATE_TABLE.format(table="default.old").replace(
            "Duration UInt64", "Duration Int64"
        )
        opened.command(ddl)
    code, _, err = run(capsys, "summarize", source)
    assert code == 2 and "is not the exporter's traces table" in err and err.count("\n") == 1
    code, _, err = run(capsys, "summarize", source + "?table=old")
    assert code == 2 and "has Duration as Int64, expected UInt64" in err
    code, _, err = run(capsys, "summarize", source + "?table=spans")
    assert code == 2 and "no table default.spans" in err


def test_the_table_made_is_the_exporters(store: str) -> None:
    with engine.open_store(store, create=True) as opened:
        spans.create_table(opened)
        rows = opened.rows(
            "SELECT name, type FROM system.columns WHERE table = 'otel_traces' ORDER BY position"
        )
    names = [name for name, _ in rows]
    assert names[:4] == ["Timestamp", "TraceId", "SpanId", "ParentSpanId"]
    assert dict(rows)["Links.Attributes"] == "Array(Map(LowCardinality(String), String))"
    for name, kind in schema.COLUMNS.items():
        assert dict(rows)[name] == kind
