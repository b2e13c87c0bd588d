"""Checks on the test suite itself: a test whose checks sit in a loop over
what the run found (spans of a kind, files matching a pattern) counts it first,
so finding nothing fails instead of passing; the suite and every Python it
starts run this checkout's ``src/`` (tests/checkout.py), not a copy installed
from elsewhere (tests/conftest.py fails a CI run with a skipped test;
tests/distribution/test_time_limits.py holds the limits)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

from checkout import SRC, python_path

import adk_otel

TESTS = Path(__file__).resolve().parents[1]

# Calls that return what a run or the repository holds, possibly nothing.
FINDERS = {"kind", "glob", "rglob", "iterdir"}
# Calls that make a list of what they are given, as long as it.
MAKERS = {"sorted", "list", "tuple", "set"}


def _finder_call(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in FINDERS
    )


def _found(node: ast.expr) -> bool:
    """A finder's result, or what is made of it: a comprehension over it, or
    ``sorted``/``list`` of it (``[s for s in rec.kind("model") if ...]``)."""
    if _finder_call(node):
        return True
    if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
        return any(_found(generator.iter) for generator in node.generators)
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in MAKERS
        and bool(node.args)
        and _found(node.args[0])
    )


def _asserts(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Assert) for n in ast.walk(node))


def _names_in_asserts(statements: list[ast.stmt]) -> set[str]:
    """Names an assert reads, and the names a value it reads was made of
    (``names = {p.name for p in files}; assert names >= {...}`` counts ``files``)."""
    asserted = {
        n.id
        for statement in statements
        for a in ast.walk(statement)
        if isinstance(a, ast.Assert)
        for n in ast.walk(a)
        if isinstance(n, ast.Name)
    }
    made_of = {
        n.id
        for s in statements
        if isinstance(s, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id in asserted for t in s.targets)
        for n in ast.walk(s.value)
        if isinstance(n, ast.Name)
    }
    return asserted | made_of


def uncounted_loops(source: str) -> list[int]:
    """Lines of loops in test functions that assert inside, over a finder's
    result that no earlier assert of the function counts."""
    found = []
    for fn in ast.walk(ast.parse(source)):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if not fn.name.startswith("test"):
            continue
        statements = list(fn.body)
        for index, statement in enumerate(statements):
            for loop in ast.walk(statement):
                if not isinstance(loop, ast.For | ast.AsyncFor) or not _asserts(loop):
                    continue
                if _found(loop.iter):
                    found.append(loop.lineno)
                elif isinstance(loop.iter, ast.Name):
                    bound = {
                        t.id
                        for s in statements[:index]
                        if isinstance(s, ast.Assign) and _found(s.value)
                        for t in s.targets
                        if isinstance(t, ast.Name)
                    }
                    counted = _names_in_asserts(statements[:index])
                    if loop.iter.id in bound and loop.iter.id not in counted:
                        found.append(loop.lineno)
    return found


def test_no_test_checks_only_inside_a_loop_over_what_it_found() -> None:
    offenders = [
        f"{path.relative_to(TESTS.parent)}:{line}"
        for path in sorted(TESTS.rglob("test_*.py"))
        for line in uncounted_loops(path.read_text(encoding="utf-8"))
    ]
    assert not offenders, f"count what the loop goes over before it: {offenders}"


def test_the_check_finds_the_loops_it_is_for() -> None:
    vacuous = """
def test_a(rec):
    for span in rec.kind("model"):
        assert span.name

def test_b(rec):
    models = rec.kind("model")
    for span in models:
        assert span.name

def test_c(root):
    for path in root.rglob("*.yaml"):
        assert "$" not in path.read_text()

def test_c2(rec, records):
    clerk_calls = [s for s in rec.kind("model") if s.name == "clerk"]
    for span in clerk_calls:
        assert records[span.span_id]

def test_c3(rec):
    for span in sorted(rec.kind("tool"), key=str):
        assert span.name
"""
    counted = """
def test_d(rec):
    models = rec.kind("model")
    assert len(models) == 2
    for span in models:
        assert span.name

def test_e(root):
    files = sorted(root.rglob("*"))
    assert files
    for path in files:
        assert path.name

def test_f(root):
    files = sorted(p for p in root.rglob("*") if p.is_file())
    names = {p.name for p in files}
    assert names >= {"a.yaml"}
    for path in files:
        assert path.read_text()
"""
    assert uncounted_loops(vacuous) == [3, 8, 12, 17, 21]
    assert uncounted_loops(counted) == []


def adk_otel_of_a_child(cwd: Path, env: dict[str, str] | None = None) -> Path:
    """Where a child Python started as the tests start them imports adk-otel from."""
    done = subprocess.run(
        [sys.executable, "-c", "import adk_otel; print(adk_otel.__file__)"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        cwd=cwd,
        env=env,
    )
    return Path(done.stdout.strip()).resolve()


def test_children_run_this_checkouts_src(tmp_path: Path) -> None:
    # A child that inherits the environment: src/ first on its path, ahead of
    # any copy the environment installed.
    assert os.environ.get("PYTHONPATH", "").split(os.pathsep)[0] == str(SRC)
    assert adk_otel_of_a_child(tmp_path).is_relative_to(SRC)
    # One given a path of its own that holds another adk_otel.
    other = tmp_path / "elsewhere"
    (other / "adk_otel").mkdir(parents=True)
    (other / "adk_otel" / "__init__.py").write_text("")
    env = {**os.environ, "PYTHONPATH": python_path(other)}
    assert adk_otel_of_a_child(tmp_path, env).is_relative_to(SRC)


def test_the_suite_runs_this_checkouts_src() -> None:
    # adk-otel's pytest plugin imports it before any test or conftest: from the
    # environment's installed copy, which must be this checkout's.
    here = Path(adk_otel.__file__).resolve()
    assert here.is_relative_to(SRC), (
        f"the tests import adk-otel from {here}, not from {SRC}: install this checkout "
        "into the environment (pip install -e '.[test]')"
    )
