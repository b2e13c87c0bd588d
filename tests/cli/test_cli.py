"""adk-otel tree / check / demo, in process and as a real subprocess."""

from __future__ import annotations

import io
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

import adk_otel
import adk_otel.cli
from adk_otel.cli.main import main

SHOP_TREE = (
    "invocation shop  ERROR error 12.3ms  [ValueError]\n"
    "└─ invoke_agent root  ERROR error 11.9ms  [ValueError]\n"
    "   ├─ generate_content scripted-model  OK ok 0.4ms\n"
    "   └─ execute_tool lookup  ERROR error 0.2ms  [ValueError: no such sku]\n"
)


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def _one_span(field: str) -> str:
    span = '{"traceId": "' + "a" * 32 + '", "spanId": "' + "b" * 16 + '", "name": "x", ' + field
    return '{"resourceSpans": [{"scopeSpans": [{"spans": [' + span + "}]}]}]}\n"


def test_tree_of_a_collector_file(capsys, collector_file: Path) -> None:
    assert run_cli(capsys, "tree", str(collector_file)) == (0, SHOP_TREE, "")


def test_tree_of_an_sdk_exported_file(capsys, exported_file: Path) -> None:
    code, out, _ = run_cli(capsys, "tree", str(exported_file))
    assert code == 0
    assert out == (
        "invocation shop  ERROR error 10.0ms  [ValueError]\n"
        "└─ invoke_agent root  ERROR error 7.0ms  [ValueError]\n"
        "   ├─ generate_content scripted-model  OK ok 1.0ms\n"
        "   └─ execute_tool lookup  ERROR error 2.0ms  [ValueError: no such sku]\n"
    )


def test_tree_normalized_and_stdin(capsys, monkeypatch, collector_file: Path) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(collector_file.read_text()))
    code, out, _ = run_cli(capsys, "tree", "-", "--normalized")
    assert code == 0
    assert out.startswith("invocation shop  INTERNAL ERROR error  [ValueError: no such sku]\n")
    assert "adk.invocation.id = <masked>" in out
    assert "4bf92f35" not in out and "ms" not in out.replace("stop", "")


def test_check_passes_on_both_files(capsys, collector_file, exported_file, shop_spec) -> None:
    for path in (collector_file, exported_file):
        code, out, err = run_cli(capsys, "check", str(path), "--expect", str(shop_spec))
        assert (code, err) == (0, "")
        assert out == "adk-otel check: OK (7 expectations, 4 spans in 1 trace(s))\n"


def test_failed_check_lists_every_failure_and_the_tree(capsys, tmp_path, collector_file) -> None:
    spec = write(
        tmp_path,
        "spec.yaml",
        """
        traces: 2
        spans:
          - tool: lookup
            outcome: ok
          - kind: model
            count: 1
          - name_matches: "^execute_tool"
            count: 0
        tree:
          name: invocation shop
          children:
            - name: invoke_agent root
              children: [execute_tool lookup]
        """,
    )
    code, out, err = run_cli(capsys, "check", str(collector_file), "--expect", str(spec))
    assert (code, err) == (1, "")
    assert out == (
        "adk-otel check: FAILED (4 of 6 expectations, 4 spans in 1 trace(s))\n"
        "  FAIL traces: expected 2, found 1\n"
        "  FAIL spans[0] (kind tool, tool 'lookup', outcome ok): expected at least 1, found 0\n"
        "  FAIL spans[2] (name ~ /^execute_tool/): expected exactly 0, found 1\n"
        "  FAIL tree: under invocation shop > invoke_agent root: unexpected span(s) "
        "'generate_content scripted-model' (add ... to allow others)\n"
        "\n"
        "expected tree:\n"
        "invocation shop\n"
        "└─ invoke_agent root\n"
        "   └─ execute_tool lookup\n"
        "\n"
        "actual trace:\n" + SHOP_TREE
    )


def test_unended_spans_fail_the_check_unless_allowed(capsys, tmp_path, collector_file) -> None:
    text = collector_file.read_text().replace('"endTimeUnixNano":"1700000000001200000",', "")
    traces = write(tmp_path, "open.jsonl", text)
    strict = write(tmp_path, "strict.yaml", "spans: [{tool: lookup}]\n")
    code, out, _ = run_cli(capsys, "check", str(traces), "--expect", str(strict))
    assert code == 1
    assert "  FAIL 1 span(s) never ended: 'execute_tool lookup'" in out
    assert "└─ execute_tool lookup  ERROR error !! NOT ENDED  [ValueError: no such sku]" in out
    lenient = write(tmp_path, "lenient.yaml", "allow_unended: true\nspans: [{tool: lookup}]\n")
    assert run_cli(capsys, "check", str(traces), "--expect", str(lenient))[0] == 0


def test_parent_and_under_take_selector_mappings(capsys, tmp_path, collector_file) -> None:
    spec = write(
        tmp_path,
        "spec.yaml",
        """
        spans:
          - tool: lookup
            parent: {agent: root, outcome: error}
            under: {invocation: shop}
          - agent: root
            parent: {kind: invocation}
            attributes: {adk.agent.type: LlmAgent}
        """,
    )
    code, out, _ = run_cli(capsys, "check", str(collector_file), "--expect", str(spec))
    assert (code, out) == (0, "adk-otel check: OK (3 expectations, 4 spans in 1 trace(s))\n")


BAD_SPECS = [
    ("tree: &a\n  name: x\n  children:\n    - *a\n", "aliases (*name) are not allowed"),
    (
        "tree:\n  name: x\n  children: &b [{name: y}]\nspans: *b\n",
        "aliases (*name) are not allowed",
    ),
    ("spans: " + "[" * 100_000 + "]" * 100_000 + "\n", "nested too deeply to be a spec"),
    ("trace: 1\n", "unknown key 'trace' (did you mean 'traces'?); allowed: traces, allow_unended"),
    ("spans:\n  - tol: lookup\n", "spans[0]: unknown key 'tol' (did you mean 'tool'?)"),
    ("tree: {name: x, outcom: ok}\n", "tree 'x': unknown key 'outcom' (did you mean 'outcome'?)"),
    ("spans:\n  - status: BROKEN\n", "spans[0]: status must be one of UNSET, OK, ERROR"),
    ("spans:\n  - tool: x\n    count: -1\n", "spans[0]: count must be a whole number >= 0"),
    ("spans: {tool: x}\n", "spans: expected a list of span entries"),
    ("spans:\n  - name_matches: '('\n", "spans[0]: name_matches: missing ), unterminated"),
    ("traces: many\n", "traces must be a whole number >= 0; got 'many'"),
    ("allow_unended: maybe\n", "allow_unended must be true or false"),
    ("- a\n- b\n", "the spec must be a mapping with keys traces, allow_unended, spans, tree"),
    ("", "the spec is empty"),
    ("spans: [\n", "invalid YAML at line 2"),
]


@pytest.mark.parametrize(("spec_text", "message"), BAD_SPECS)
def test_bad_specs_exit_2_with_one_line(
    capsys, tmp_path, collector_file, spec_text, message
) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(spec_text)
    code, out, err = run_cli(capsys, "check", str(collector_file), "--expect", str(spec))
    assert (code, out) == (2, "")
    assert err.startswith(f"adk-otel: error: {spec}: ")
    assert message in err
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file"),
        ("", "empty, no OTLP JSON in it"),
        ('{"resourceMetrics": []}\n', "holds metrics or logs only, no traces"),
        ("hello\n", "line 1: invalid JSON (Expecting value)"),
        ('{"spans": []}\n', 'line 1: not OTLP JSON traces (no "resourceSpans"; keys: spans)'),
        ("[" * 100_000 + "]" * 100_000, "line 1: nested too deeply to be OTLP JSON"),
        (
            _one_span('"startTimeUnixNano": "--5"'),
            "line 1: not valid OTLP JSON (resourceSpans[0].scopeSpans[0].spans[0]."
            "startTimeUnixNano must be an integer (as a string); got '--5')",
        ),
        (
            _one_span('"startTimeUnixNano": "' + "9" * 5000 + '"'),
            "line 1: not valid OTLP JSON (resourceSpans[0].scopeSpans[0].spans[0]."
            "startTimeUnixNano must be an integer (as a string); got '9999999999999999999"
            "99999999999999999...)",
        ),
        (
            '{"resourceSpans": []}\n' + "[" * 100_000 + "]" * 100_000 + "\n",
            "line 2: nested too deeply to be OTLP JSON",
        ),
    ],
    ids=[
        "missing",
        "empty",
        "metrics",
        "not-json",
        "not-traces",
        "deep",
        "deep-line",
        "bad-timestamp",
        "huge-timestamp",
    ],
)
def test_bad_trace_files_exit_2_with_one_line(
    capsys, tmp_path, shop_spec, content, message
) -> None:
    path = tmp_path / "traces.jsonl"
    if content is not None:
        path.write_text(content)
    for argv in (["tree", str(path)], ["check", str(path), "--expect", str(shop_spec)]):
        code, out, err = run_cli(capsys, *argv)
        assert (code, out) == (2, "")
        assert err == f"adk-otel: error: {path}: {message}\n"


def test_missing_spec_file(capsys, tmp_path, collector_file) -> None:
    missing = tmp_path / "nope.yaml"
    code, _, err = run_cli(capsys, "check", str(collector_file), "--expect", str(missing))
    assert (code, err) == (2, f"adk-otel: error: {missing}: no such file\n")


def test_usage_errors_and_help(capsys) -> None:
    code, _, err = run_cli(capsys)
    assert code == 2 and "the following arguments are required: COMMAND" in err
    code, out, _ = run_cli(capsys, "--help")
    assert code == 0 and "tree" in out and "check" in out and "demo" in out


def test_demo_passes_its_arguments_on(capsys, monkeypatch) -> None:
    seen: list[list[str]] = []
    fake = types.ModuleType("adk_otel.cli.demo")
    fake.main = lambda argv: seen.append(argv) or 3  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "adk_otel.cli.demo", fake)
    monkeypatch.setattr(adk_otel.cli, "demo", fake, raising=False)
    assert main(["demo", "--fail", "-h"]) == 3
    assert seen == [["--fail", "-h"]]


def subprocess_cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "adk_otel.cli", *argv], capture_output=True, text=True, timeout=60
    )


def test_as_a_subprocess(collector_file: Path, tmp_path: Path) -> None:
    tree = subprocess_cli("tree", str(collector_file))
    assert (tree.returncode, tree.stdout, tree.stderr) == (0, SHOP_TREE, "")

    failing = write(tmp_path, "f.yaml", "spans: [{tool: lookup, outcome: ok}]\n")
    failed = subprocess_cli("check", str(collector_file), "--expect", str(failing))
    assert failed.returncode == 1
    assert "FAIL spans[0]" in failed.stdout

    bad = write(tmp_path, "bad.jsonl", '{"resourceSpans": [\n')
    broken = subprocess_cli("tree", str(bad))
    assert broken.returncode == 2
    assert broken.stderr == f"adk-otel: error: {bad}: line 2: invalid JSON (Expecting value)\n"
    assert "Traceback" not in broken.stderr


def test_version(capsys) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"adk-otel {adk_otel.__version__}\n"


@pytest.mark.parametrize(
    ("env", "flag", "coloured"),
    [
        ({}, [], False),  # not a terminal
        ({"FORCE_COLOR": "1"}, [], True),
        ({"NO_COLOR": "1"}, ["--color"], True),  # an explicit flag wins
        ({"FORCE_COLOR": "1"}, ["--no-color"], False),
    ],
)
def test_colour_follows_the_terminal_and_the_conventions(
    capsys, monkeypatch, collector_file, env, flag, coloured
) -> None:
    for name in ("FORCE_COLOR", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    code, out, _ = run_cli(capsys, "tree", str(collector_file), *flag)
    assert code == 0
    assert ("\x1b[" in out) is coloured


def test_a_trace_deeper_than_the_recursion_limit_is_drawn(capsys, tmp_path) -> None:
    import json

    spans = [
        {
            "traceId": "a" * 32,
            "spanId": f"{i + 1:016x}",
            **({"parentSpanId": f"{i:016x}"} if i else {}),
            "name": f"s{i}",
            "startTimeUnixNano": str(i),
            "endTimeUnixNano": str(i + 1),
        }
        for i in range(3000)
    ]
    path = write(
        tmp_path, "deep.json", json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]})
    )
    code, out, _ = run_cli(capsys, "tree", str(path))
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 3000 and lines[-1].lstrip(" └─").startswith("[2999] s2999")
    # Past MAX_DRAWN_DEPTH the indentation stops growing: output linear in the spans.
    assert max(len(line) for line in lines) < 200
    assert lines[48] == " " * 141 + "└─ s48  UNSET 0.0ms"
    assert lines[49] == " " * 144 + "└─ [49] s49  UNSET 0.0ms"
    assert lines[50] == " " * 144 + "└─ [50] s50  UNSET 0.0ms"


def test_a_lone_surrogate_in_a_span_name_is_printed_readably(capsys, tmp_path) -> None:
    path = write(
        tmp_path, "odd.json", _one_span('"name": "report-\\udcff.csv"').replace('"name": "x", ', "")
    )
    code, out, _ = run_cli(capsys, "tree", str(path))
    assert code == 0
    out.encode("utf-8")  # printable as UTF-8
    assert "report-\\udcff.csv" in out, "the odd character shown as its escape"


def test_each_subcommand_help_shows_its_formats_and_exit_codes(capsys) -> None:
    exit_codes = {
        "tree": "Exit codes: 0 fine, 2 unusable input",  # tree never fails a check
        "check": "Exit codes: 0 the check passed, 1 it failed",
    }
    for command, codes in exit_codes.items():
        assert main([command, "--help"]) == 0
        out = capsys.readouterr().out
        assert codes in out, command
        assert "FILE is OTLP JSON" in out
        assert "--max-document-mb MB" in out and "ADK_OTEL_MAX_<NAME>_MB" in out
        assert "``" not in out
    assert main(["tree", "--help"]) == 0
    assert "1 it failed" not in capsys.readouterr().out
    assert main(["check", "--help"]) == 0
    out = capsys.readouterr().out
    assert "allow_unended" in out, "the spec format is described"
    assert "--max-spec-mb MB" in out
