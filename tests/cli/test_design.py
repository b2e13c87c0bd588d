"""The trace-reading half stays apart from the runtime: reading a file never imports ADK."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import adk_otel

READING_HALF = {"cli", "otlp_json", "trace_files", "trace_model", "query", "render", "report_json"}
LEAF_HELPERS = {"semconv", "sanitize", "env", "version", "redact"}  # no runtime imports either
SOURCE = Path(adk_otel.__file__).parent


def module_level_imports(module: str) -> set[str]:
    """The adk_otel modules ``module`` imports when it is imported (not inside functions)."""
    tree = ast.parse((SOURCE / f"{module}.py").read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            found |= {node.module} if node.module else {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("adk_otel."):
            found.add(node.module.split(".")[1])  # type: ignore[union-attr]
    return found


def test_the_reading_half_imports_only_itself_and_leaf_helpers() -> None:
    for module in READING_HALF | LEAF_HELPERS:
        imports = module_level_imports(module)
        assert imports <= READING_HALF | LEAF_HELPERS, (module, imports - READING_HALF)


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
