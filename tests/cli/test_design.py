"""The layering holds (pyproject.toml's import contract); reading a trace file never imports ADK."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import adk_otel

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def lint_imports(config: Path, source: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(config), "--no-cache"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(source)},
    )


def test_the_import_contract_holds() -> None:
    # pyproject.toml's [tool.importlinter]: no circles, runtime layers, the
    # ledger free of ADK, the reading half's layers, the reading half apart
    # from the runtime (also a step of its own in CI).
    done = lint_imports(ROOT / "pyproject.toml", Path(adk_otel.__file__).parents[1])
    assert done.returncode == 0, done.stdout + done.stderr
    assert "6 kept, 0 broken" in done.stdout


def test_the_import_contract_fails_on_a_circle(tmp_path: Path) -> None:
    # The same contract over a copy of the package in which a2a imports the
    # plugin back (the circle the project once had): the check must fail.
    source = tmp_path / "src"
    shutil.copytree(Path(adk_otel.__file__).parent, source / "adk_otel")
    a2a = source / "adk_otel" / "integrations" / "a2a.py"
    a2a.write_text(a2a.read_text() + "\nfrom ..plugin import AdkOtelPlugin  # noqa\n")
    reading = source / "adk_otel" / "traces" / "render.py"
    reading.write_text(reading.read_text() + "\nfrom ..ledger import Ledger  # noqa\n")
    # A file reader that leans on the comparisons above it, and a sub-package
    # module reaching the runtime: both inside the contracts too.
    files = source / "adk_otel" / "traces" / "io" / "files.py"
    files.write_text(files.read_text() + "\nfrom ..comparisons.stats import quantize  # noqa\n")
    stats = source / "adk_otel" / "traces" / "comparisons" / "stats.py"
    stats.write_text(stats.read_text() + "\nfrom ...ledger.metrics import Instruments  # noqa\n")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    done = lint_imports(tmp_path / "pyproject.toml", source)
    assert done.returncode == 1, done.stdout
    assert "No import circles BROKEN" in done.stdout
    assert "imports nothing of the runtime BROKEN" in done.stdout
    # All but the ledger's and the wrapper walker's: the reading half's layers too.
    assert "2 kept, 4 broken" in done.stdout
    assert "adk_otel.traces.comparisons.stats -> adk_otel.ledger.metrics" in done.stdout


def test_the_import_contract_keeps_the_ledger_free_of_adk(tmp_path: Path) -> None:
    # A copy in which the span bookkeeping reads an ADK object itself.
    source = tmp_path / "src"
    shutil.copytree(Path(adk_otel.__file__).parent, source / "adk_otel")
    facts = source / "adk_otel" / "ledger" / "facts.py"
    facts.write_text(facts.read_text() + "\nfrom google.adk.agents import BaseAgent  # noqa\n")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    done = lint_imports(tmp_path / "pyproject.toml", source)
    assert done.returncode == 1, done.stdout
    assert "is ADK-free BROKEN" in done.stdout


def test_reading_a_trace_file_imports_no_adk(tmp_path) -> None:
    # One span, as the file exporter writes it.
    line = (
        '{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736",'
        '"spanId":"00f067aa0ba902b7","name":"x","startTimeUnixNano":"1","endTimeUnixNano":"2"}]}]}]}'
    )
    (tmp_path / "t.json").write_text(line + "\n")
    script = (
        "import sys; from adk_otel.cli import main; code = main(['tree', sys.argv[1]]); "
        "print(sorted(m for m in sys.modules if m.startswith(('google.adk', 'adk_otel.plugin'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "t.json")],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.splitlines()[-1] == "[]"
