"""What a new user meets in the reading commands: summarize's table, evalset's
--where taking attribute keys as every command does (with a did-you-mean), and
tree naming files that are not traces: the console exporter's output,
adk-otel's own summary and eval set."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
from testing.builders import TraceBuilder, build_shop

from adk_otel.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_summarize_prints_a_table_per_group(exported_file: Path, capsys) -> None:
    code, out, err = run(capsys, "summarize", str(exported_file))
    assert code == 0, err
    head, columns, row = out.splitlines()[:3]
    assert head.startswith("adk-otel summarize: 1 runs in 1 group(s)")
    for column in ("runs", "error rate", "p50 ms", "p95 ms", "tokens/run", "failures (runs)"):
        assert column in columns
    cells = row.split()
    assert cells[:3] == ["shop", "1", "100.0%"], row
    assert "tool_exception 1" in row or "1" in cells[-1], row


def test_tree_names_the_console_exporters_output(tmp_path: Path, capsys) -> None:
    printed = io.StringIO()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=printed)))
    build_shop(TraceBuilder(provider))
    provider.shutdown()
    path = tmp_path / "console.txt"
    path.write_text(printed.getvalue())
    code, out, err = run(capsys, "tree", str(path))
    assert (code, out) == (2, "")
    assert "console exporter output" in err and "OTEL_TRACES_EXPORTER=otlp_json_file" in err
    assert len(err.splitlines()) == 1


def test_tree_names_adk_otels_own_files(exported_file: Path, tmp_path: Path, capsys) -> None:
    summary = tmp_path / "base.summary.json"
    assert run(capsys, "summarize", str(exported_file), "-o", str(summary))[0] == 0
    code, _, err = run(capsys, "tree", str(summary))
    assert code == 2 and "an adk-otel summary (adk-otel summarize -o), not traces" in err
    eval_set = tmp_path / "bad.evalset.json"
    eval_set.write_text(json.dumps({"eval_set_id": "s", "eval_cases": []}, indent=2))
    code, _, err = run(capsys, "tree", str(eval_set))
    assert code == 2 and "an ADK eval set (adk-otel evalset -o), not traces" in err


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("service.version=9", "no run has 'service.version'"),
        ("service.name=nope", "service.name holds '"),  # its name: as the test's environment
        (" adk.outcome = ok ", "outcome holds 'error' (1 runs)"),
        ("outcme=error", "unknown key 'outcme' (did you mean outcome?)"),
        # Selected (then refused for want of content, which the shop trace never captured):
        ("adk.outcome=error", "captured without content"),
        ("adk.app.name = shop", "captured without content"),
        ("adk.span.kind=invocation", "captured without content"),  # any attribute key
    ],
)
def test_evalset_where_speaks_every_commands_keys(
    exported_file: Path, where: str, message: str, capsys
) -> None:
    code, _, err = run(capsys, "evalset", str(exported_file), "--where", where)
    assert code == 2
    assert message in err, err
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize("command", ["tree", "summarize", "check"])
def test_where_selects_runs_in_trace_files_as_in_a_store(
    exported_file: Path, shop_spec: Path, command: str, capsys
) -> None:
    extra = ["--expect", str(shop_spec)] if command == "check" else []
    code, everything, err = run(capsys, command, str(exported_file), *extra)
    assert code in (0, 1), err
    code, selected, err = run(
        capsys, command, str(exported_file), *extra, "--where", " outcome = error "
    )
    assert code in (0, 1), err
    assert selected == everything
    code, out, err = run(capsys, command, str(exported_file), *extra, "--where", "outcome=ok")
    assert (code, out) == (2, "")
    assert "no run matches adk.outcome=ok (adk.outcome holds 'error' (1 runs))" in err
    code, _, err = run(capsys, command, str(exported_file), *extra, "--where", "versoin=1")
    assert code == 2 and "no run has 'versoin'" in err


def test_compare_selects_runs_in_trace_files_as_in_a_store(
    exported_file: Path, tmp_path: Path, capsys
) -> None:
    both = [str(exported_file), str(exported_file)]
    code, everything, err = run(capsys, "compare", *both)
    assert code in (0, 1), err
    code, selected, err = run(capsys, "compare", *both, "--where", " outcome = error ")
    assert (code, selected) == (code, everything), err
    code, out, err = run(capsys, "compare", *both, "--where", "outcome=ok")
    assert (code, out) == (2, "")
    assert "no run matches adk.outcome=ok (adk.outcome holds 'error' (1 runs))" in err
    summary = tmp_path / "base.summary.json"
    assert run(capsys, "summarize", str(exported_file), "-o", str(summary))[0] == 0
    code, _, err = run(capsys, "compare", str(summary), str(exported_file), "--where", "x=1")
    assert code == 2 and "a summary holds its runs already summarized" in err
