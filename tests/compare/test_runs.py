"""Runs from span records: the same summary whatever order the spans come in,
and memory for runs in flight only when they come in export order."""

from __future__ import annotations

import json
import random
import tracemalloc
from dataclasses import replace
from pathlib import Path

import jsonschema
import pytest

from adk_otel import semconv as sc
from adk_otel.traces.comparisons.regression import summarize_files
from adk_otel.traces.comparisons.runs import OutOfOrder, Summary, pooled, summarize
from adk_otel.traces.comparisons.summary_file import to_json
from adk_otel.traces.io.files import iter_records

from .synth import Shape, otlp_line, runs, write_runs


def test_any_order_gives_the_same_summary(tmp_path: Path) -> None:
    records = runs(random.Random(4), 60, Shape(error_rate=0.3))
    expected = to_json(summarize(records))
    assert expected["groups"][0]["runs"] == 60
    shuffled = list(records)
    random.Random(5).shuffle(shuffled)
    assert to_json(summarize(shuffled)) == expected
    assert to_json(summarize(records, in_order=True)) == expected
    with pytest.raises(OutOfOrder):
        summarize(list(reversed(records)), in_order=True)
    # From files: in export order, and reversed (read again, in any order).
    (tmp_path / "in-order.jsonl").write_text(otlp_line(records) + "\n")
    (tmp_path / "reversed.jsonl").write_text(otlp_line(list(reversed(records))) + "\n")
    for name in ("in-order.jsonl", "reversed.jsonl"):
        summary = to_json(summarize_files([str(tmp_path / name)]))
        assert summary["groups"] == expected["groups"]


def test_a_run_without_its_invocation_span_is_counted_apart(tmp_path: Path) -> None:
    records = runs(random.Random(6), 3)
    orphaned = [r for r in records if r.name != "invocation shop"][:4] + records
    (tmp_path / "t.jsonl").write_text(otlp_line(orphaned) + "\n")
    summary = summarize_files([str(tmp_path / "t.jsonl")])
    assert summary.runs == 3 and summary.unattached_spans == 0  # those 4 belong to run 1
    stray = [r for r in runs(random.Random(7), 1) if r.name != "invocation shop"]
    (tmp_path / "t.jsonl").write_text(otlp_line(stray + records) + "\n")
    summary = summarize_files([str(tmp_path / "t.jsonl")])
    assert summary.runs == 3 and summary.unattached_spans == len(stray)


def test_memory_holds_runs_in_flight_not_runs(tmp_path: Path) -> None:
    def peak(count: int) -> int:
        path = write_runs(tmp_path / f"{count}.jsonl", random.Random(count), count)
        tracemalloc.start()
        try:
            summary = summarize(iter_records([str(path)]), in_order=True)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
            assert summary.runs == count

    small, large = peak(300), peak(3000)
    # Ten times the runs: the peak grows by the remembered run hashes (10,000 at most)
    # and the distributions' distinct values, not by every run's numbers (3.5 kB a run).
    assert large - small < 2700 * 1000, (small, large)


def test_adks_own_invoke_workflow_spans_are_not_runs() -> None:
    # Kept with keep_adk_spans: ADK's own span of the turn, same operation name, another scope.
    records = runs(random.Random(8), 2)
    invocation = next(r for r in records if r.name == "invocation shop")
    adks = replace(
        invocation,
        span_id="00000000000000ad",
        name="invoke_workflow root",
        scope="gcp.vertex.agent",
        attributes={sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_WORKFLOW},  # no adk.* attributes
    )
    assert summarize([adks, *records]).runs == 2


def test_the_summary_file_matches_its_schema(tmp_path: Path) -> None:
    schema = json.loads((Path(__file__).parents[2] / "docs" / "summary.schema.json").read_text())
    records = runs(random.Random(8), 30, Shape(error_rate=0.3))
    document = to_json(summarize(records + records[:5], ["adk.app.name"]))
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(document, schema)
    assert document["duplicate_spans"] == 5
    assert any(layer["errors"] for group in document["groups"] for layer in group["layers"])
    # The schema has teeth: a histogram of counts that are not whole numbers is refused.
    document["groups"][0]["tokens"] = [[100.0, 0.5]]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, schema)


def test_groups_pooled_are_the_runs_ungrouped() -> None:
    records = runs(random.Random(9), 30, Shape(error_rate=0.3, conversation=True))
    whole = summarize(records)
    split = summarize(records, [sc.GEN_AI_CONVERSATION_ID])
    assert len(split.groups) == 30
    (expected,) = to_json(whole)["groups"]
    (merged,) = to_json(Summary(groups={next(iter(whole.groups)): pooled(split.groups.values())}))[
        "groups"
    ]
    assert merged == expected
