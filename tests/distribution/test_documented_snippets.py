"""The README's and the docs' commands and snippets, run or checked as
written, so they cannot drift from what adk-otel does: the README's pytest
example and the getting-started app and test run for real (offline, on the
scripted model); every ``adk-otel`` command line shown parses with the CLI's
own parser; every Python snippet compiles."""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from adk_otel.cli.main import build_parser

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
_BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def blocks(doc: Path, language: str) -> list[str]:
    return [
        body for lang, body in _BLOCK.findall(doc.read_text(encoding="utf-8")) if lang == language
    ]


def section(doc: Path, heading: str) -> str:
    return doc.read_text(encoding="utf-8").split(heading, 1)[1].split("\n## ", 1)[0]


def python_in(text: str) -> list[str]:
    return [body for lang, body in _BLOCK.findall(text) if lang == "python"]


def _ini(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")


def test_the_readme_pytest_example_passes(pytester: pytest.Pytester) -> None:
    [example] = [
        b for b in python_in(section(README, "## Assert on traces in CI")) if "def test_" in b
    ]
    _ini(pytester)
    pytester.makepyfile(test_readme_example=example)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_the_getting_started_app_prints_its_trace_and_its_test_passes(
    pytester: pytest.Pytester,
) -> None:
    page = ROOT / "docs" / "getting-started.md"
    app, test = (b for b in blocks(page, "python") if b.startswith(("# app.py", "# test_app.py")))
    [command] = [
        line
        for b in blocks(page, "bash")
        for line in b.splitlines()
        if "OTEL_TRACES_EXPORTER=console" in line
    ]
    pytester.makepyfile(app=app)
    *assignments, python, script = shlex.split(command)
    assert (python, script) == ("python", "app.py")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "ADK_OTEL_"))}
    env.update(a.split("=", 1) for a in assignments)
    done = subprocess.run(
        [sys.executable, script],
        cwd=pytester.path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith("A1: 3 in stock\n") or "A1: 3 in stock\n" in done.stdout
    names = re.findall(r'^    "name": "([^"]+)"', done.stdout, re.M)
    # The spans, in the order they ended (ADK 2.5 ends the tool call after the
    # model call that follows it, 2.13 before): the same five either way.
    assert sorted(names) == sorted(
        [
            "generate_content scripted-model",
            "execute_tool lookup",
            "generate_content scripted-model",
            "invoke_agent clerk",
            "invocation shop",
        ]
    ), names
    assert names[-2:] == ["invoke_agent clerk", "invocation shop"], names
    assert '"service.name": "shop"' in done.stdout
    assert "Traceback" not in done.stderr and "WARNING" not in done.stderr, done.stderr

    _ini(pytester)
    pytester.makepyfile(test_app=test)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "test_app.py")
    result.assert_outcomes(passed=1)


def test_the_getting_started_file_exporter_keeps_a_file_tree_reads(
    pytester: pytest.Pytester,
) -> None:
    """The page's first way to see a trace: the file exporter, then ``adk-otel tree``."""
    page = ROOT / "docs" / "getting-started.md"
    [app] = (b for b in blocks(page, "python") if b.startswith("# app.py"))
    [block] = (b for b in blocks(page, "bash") if "OTEL_TRACES_EXPORTER=otlp_json_file" in b)
    run_line, tree_line = block.strip().splitlines()
    pytester.makepyfile(app=app)
    *assignments, python, script = shlex.split(run_line)
    assert (python, script) == ("python", "app.py")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "ADK_OTEL_"))}
    env.update(a.split("=", 1) for a in assignments)
    done = subprocess.run(
        [sys.executable, script],
        cwd=pytester.path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "WARNING" not in done.stderr, done.stderr
    command, *arguments = shlex.split(tree_line)
    assert command == "adk-otel"
    from adk_otel.cli import main

    cwd = os.getcwd()
    os.chdir(pytester.path)
    try:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main([*arguments, "--no-color"]) == 0
    finally:
        os.chdir(cwd)
    documented = next(b for b in blocks(page, "text") if b.startswith("invocation shop"))
    shape = [re.sub(r" [0-9.]+ms$", "", line) for line in documented.strip().splitlines()]
    assert [re.sub(r" [0-9.]+ms$", "", line) for line in out.getvalue().strip().splitlines()] == (
        shape
    )


def _command_lines() -> list[tuple[str, str]]:
    """Every ``adk-otel ...`` line in a shell block, continuations joined and
    the shell's redirections, pipes and comments cut off."""
    found = []
    for doc in PAGES:
        for body in blocks(doc, "bash") + blocks(doc, "console") + blocks(doc, "text"):
            for line in body.replace("\\\n", " ").splitlines():
                line = line.strip().removeprefix("$ ")
                match = re.match(r"(?:\S+=\S+\s+)*(?:\.venv/bin/)?adk-otel(\s.*)?$", line)
                if match:
                    found.append((doc.name, (match.group(1) or "").strip()))
    return found


COMMANDS = _command_lines()


def test_commands_are_found() -> None:
    docs = {doc for doc, _ in COMMANDS}
    assert {"README.md", "testing.md", "compare.md"} <= docs, docs


@pytest.mark.parametrize(("doc", "command"), COMMANDS, ids=[f"{d}: {c}" for d, c in COMMANDS])
def test_every_documented_command_parses(doc: str, command: str) -> None:
    if re.match(r"\w+: ", command):
        return  # output ("adk-otel check: OK ..."), not a command
    words = shlex.split(command, comments=True)
    for cut in ("|", ">", ">>", "2>", "&&", ";"):
        if cut in words:
            words = words[: words.index(cut)]
    words = [w for w in words if not w.startswith((">", "2>"))]
    if words[:1] == ["demo"] or not words:
        return  # demo hands its arguments on to the demo's own parser
    parser = build_parser()
    try:
        parser.parse_args(words)
    except SystemExit as exit:
        if exit.code == 0:
            return  # --version, --help
        pytest.fail(f"{doc}: `adk-otel {command}` does not parse (exit {exit.code})")


@pytest.mark.parametrize("doc", PAGES, ids=lambda p: p.name)
def test_every_python_snippet_compiles(doc: Path) -> None:
    for body in blocks(doc, "python"):
        compile(body, f"{doc.name} snippet", "exec")
