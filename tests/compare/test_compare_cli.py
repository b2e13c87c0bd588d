"""``adk-otel summarize`` / ``compare`` end to end: verdicts, exit codes, reports,
summaries round-tripped, hostile input answered in one line with exit 2."""

from __future__ import annotations

import gzip
import io
import json
import random
from pathlib import Path

import jsonschema
import pytest

from adk_otel.cli.main import main
from adk_otel.testing import compare

from .synth import Shape, write_runs

SCHEMA = json.loads((Path(__file__).parents[2] / "docs" / "compare-output.schema.json").read_text())


@pytest.fixture(scope="module")
def sides(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("sides")
    rng = random.Random(3)
    out = {}
    for name, shape in (
        ("base", Shape()),
        ("same", Shape()),
        ("tokens", Shape(token_scale=2.0)),
        ("errors", Shape(error_rate=0.6)),
    ):
        (root / name).mkdir()
        write_runs(root / name / "traces.jsonl", rng, 40, shape)
        out[name] = root / name
    return out


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_same_distribution_passes_every_gate(sides, capsys) -> None:
    code, out, err = run(
        capsys, "compare", str(sides["base"]), str(sides["same"]), "--fail-on", "any"
    )
    assert code == 0, out + err
    assert out.startswith("adk-otel compare: OK (no gate tripped)")
    assert "== shop (40 baseline vs 40 candidate runs)" in out


def test_a_regression_trips_its_gate_with_exit_1_and_says_why(sides, capsys) -> None:
    code, out, _ = run(
        capsys, "compare", str(sides["base"]), str(sides["tokens"]), "--fail-on", "tokens=+50%"
    )
    assert code == 1
    assert out.startswith("adk-otel compare: REGRESSION (tripped: tokens)")
    assert "TRIPPED tokens: shop: mean tokens per run" in out
    # The same change under a threshold it does not exceed, or without the gate: exit 0.
    assert (
        main(["compare", str(sides["base"]), str(sides["tokens"]), "--fail-on", "tokens=+150%"])
        == 0
    )
    assert main(["compare", str(sides["base"]), str(sides["tokens"]), "--fail-on", "errors"]) == 0
    assert main(["compare", str(sides["base"]), str(sides["tokens"])]) == 0


def test_a_summary_round_trips_to_the_same_verdict(sides, tmp_path, capsys) -> None:
    summary = tmp_path / "baseline.summary.json"
    code, out, _ = run(capsys, "summarize", str(sides["base"]), "-o", str(summary))
    assert code == 0 and "40 runs in 1 group(s)" in out
    assert summary.stat().st_size < 20_000  # small enough to commit
    for candidate in ("same", "errors"):
        direct = json.loads(
            run(
                capsys,
                "compare",
                str(sides["base"]),
                str(sides[candidate]),
                "--format",
                "json",
                "--fail-on",
                "any",
            )[1]
        )
        via = json.loads(
            run(
                capsys,
                "compare",
                str(summary),
                str(sides[candidate]),
                "--format",
                "json",
                "--fail-on",
                "any",
            )[1]
        )
        for document in (direct, via):
            document["baseline"].pop("source")
        assert via == direct
    assert direct["verdict"] == "regression" and direct["tripped_gates"] == ["errors"]


def test_json_output_validates_against_its_schema(sides, capsys) -> None:
    for candidate in ("same", "tokens", "errors"):
        code, out, _ = run(
            capsys,
            "compare",
            str(sides["base"]),
            str(sides[candidate]),
            "--format",
            "json",
            "--fail-on",
            "any",
        )
        document = json.loads(out)
        jsonschema.validate(document, SCHEMA)
        assert document["exit_code"] == code
    broken = {**document, "verdict": "maybe"}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, SCHEMA)


def test_markdown_report_for_a_job_summary(sides, capsys) -> None:
    code, out, _ = run(
        capsys,
        "compare",
        str(sides["base"]),
        str(sides["errors"]),
        "--format",
        "markdown",
        "--fail-on",
        "errors",
    )
    assert code == 1
    assert out.startswith("## :x: adk-otel compare: REGRESSION (tripped: errors)")
    assert "| runs ending in error |" in out
    assert "**TRIPPED errors**" in out


def test_text_colour_follows_the_tree_rules(sides, capsys, monkeypatch) -> None:
    args = ["compare", str(sides["base"]), str(sides["errors"]), "--fail-on", "errors"]
    assert "\x1b[31m" in run(capsys, *args, "--color")[1]
    assert "\x1b[" not in run(capsys, *args)[1]  # not a terminal
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert "\x1b[31m" in run(capsys, *args)[1]


def test_one_side_from_stdin(sides, capsys, monkeypatch) -> None:
    text = (sides["same"] / "traces.jsonl").read_text()
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    code, out, _ = run(capsys, "compare", str(sides["base"]), "-", "--fail-on", "any")
    assert code == 0 and "candidate: 40 runs (-)" in out


def test_the_python_api_fails_readably_in_pytest(sides) -> None:
    assert compare(sides["base"], sides["same"]).ok
    result = compare(sides["base"], sides["errors"], fail_on=["errors"])
    assert result.exit_code == 1 and result.tripped_gates == ["errors"]
    with pytest.raises(AssertionError, match="TRIPPED errors: shop: runs ending in error"):
        result.check()


def _empty(tmp_path: Path) -> Path:
    (tmp_path / "empty.jsonl").write_text("")
    return tmp_path / "empty.jsonl"


def _no_runs(tmp_path: Path) -> Path:
    line = (
        '{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736",'
        '"spanId":"00f067aa0ba902b7","name":"GET /","startTimeUnixNano":"1",'
        '"endTimeUnixNano":"2"}]}]}]}'
    )
    (tmp_path / "http.jsonl").write_text(line + "\n")
    return tmp_path / "http.jsonl"


def _newer(tmp_path: Path) -> Path:
    path = tmp_path / "newer.summary.json"
    path.write_text('{"format":"adk-otel-summary","version":99,"groups":[]}\n')
    return path


def _damaged(tmp_path: Path) -> Path:
    path = tmp_path / "damaged.summary.json"
    path.write_text('{"format":"adk-otel-summary","version":1,"groups":[{"runs":"x"}]}\n')
    return path


def _negative_counts(tmp_path: Path) -> Path:
    # A summary edited by hand: a histogram with a negative count and an infinite value.
    group = {
        "key": {"adk.app.name": "shop"}, "runs": 5, "outcomes": {"ok": 5}, "error_runs": {},
        "latency_ms": [[100, -3]], "input_tokens": [], "output_tokens": [],
        "tokens": [[1e999, 5]], "model_calls": [], "tool_calls": [], "paths": [], "layers": [],
    }  # fmt: skip
    path = tmp_path / "negative.summary.json"
    path.write_text(json.dumps({"format": "adk-otel-summary", "version": 1, "groups": [group]}))
    return path


def _gzip_of_nothing(tmp_path: Path) -> Path:
    path = tmp_path / "blank.json.gz"
    path.write_bytes(gzip.compress(b" " * 100_000))
    return path


@pytest.mark.parametrize(
    ("make", "side", "message"),
    [
        (_empty, "both", "empty.jsonl"),
        (_empty, "candidate", "empty.jsonl"),
        (_no_runs, "candidate", "no invocation span in 1 spans"),
        (_newer, "baseline", "summary format version 99 is newer than this adk-otel reads"),
        (_damaged, "baseline", "a malformed summary"),
        (_negative_counts, "baseline", "a histogram entry of 100 x -3"),
        (_gzip_of_nothing, "candidate", "blank.json.gz"),
    ],
)
def test_hostile_input_is_one_line_and_exit_2(sides, tmp_path, capsys, make, side, message) -> None:
    bad = str(make(tmp_path))
    base = bad if side in ("both", "baseline") else str(sides["base"])
    cand = bad if side in ("both", "candidate") else str(sides["base"])
    code, out, err = run(capsys, "compare", base, cand, "--fail-on", "any")
    assert code == 2, out
    assert out == "" and err.count("\n") == 1 and err.startswith("adk-otel: error: ")
    assert message in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--fail-on", "speed"], "unknown rule"),
        (["--fail-on", "tokens=lots"], "the threshold must be a percentage"),
        (["--alpha", "1.5"], "--alpha 1.5: must be between 0 and 1"),
        (["--group-by", "case"], "grouped by app only, not by case"),
    ],
)
def test_bad_options_are_one_line_and_exit_2(sides, tmp_path, capsys, argv, message) -> None:
    summary = tmp_path / "s.json"
    assert main(["summarize", str(sides["base"]), "-o", str(summary)]) == 0
    capsys.readouterr()
    code, _, err = run(capsys, "compare", str(summary), str(sides["same"]), *argv)
    assert code == 2 and err.count("\n") == 1 and message in err


def test_stdin_is_one_side_only(capsys) -> None:
    code, _, err = run(capsys, "compare", "-", "-")
    assert code == 2 and "stdin can be one side only" in err


def test_two_summaries_compare_and_help_is_there(sides, tmp_path, capsys) -> None:
    for name in ("base", "tokens"):
        assert main(["summarize", str(sides[name]), "-o", str(tmp_path / f"{name}.json")]) == 0
    base, tokens = str(tmp_path / "base.json"), str(tmp_path / "tokens.json")
    assert main(["compare", base, tokens, "--fail-on", "tokens"]) == 1
    assert repr(compare(base, tokens)) == "<Regression: REGRESSION (tripped: tokens)>"
    capsys.readouterr()
    assert main(["compare", "--help"]) == 0
    assert "tokens=+N%" in capsys.readouterr().out
    assert main(["--help"]) == 0
    assert "summarize" in capsys.readouterr().out


def test_the_public_compare_is_the_function_whatever_was_imported() -> None:
    import importlib
    import pkgutil

    import adk_otel.traces

    for module in pkgutil.walk_packages(adk_otel.traces.__path__, "adk_otel.traces."):
        importlib.import_module(module.name)
    assert callable(adk_otel.traces.compare) and adk_otel.traces.compare is compare


def test_the_errors_rule_takes_a_minimum_rise_in_points(sides, capsys) -> None:
    args = ["compare", str(sides["base"]), str(sides["errors"])]
    assert main([*args, "--fail-on", "errors=+80%"]) == 0  # 5 % -> about 60 %: +55 points
    assert main([*args, "--fail-on", "errors=+20%"]) == 1
    assert "gates: errors=+20%" in capsys.readouterr().out


def test_comparing_imports_no_adk(sides) -> None:
    import subprocess
    import sys

    script = (
        "import sys; from adk_otel.cli import main; code = main(['compare', sys.argv[1], "
        "sys.argv[2], '--format', 'json']); "
        "print(sorted(m for m in sys.modules if m.startswith(('google.adk', 'adk_otel.plugin'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(sides["base"]), str(sides["same"])],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert done.stdout.splitlines()[-1] == "[]"
