"""docs/testing.md's script running ``OtlpReceiver`` outside pytest, run as a
user would: it collects a real app's traces and saves what the CLI reads."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from adk_otel.traces import read_records

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "testing.md"


def documented_script() -> str:
    section = GUIDE.read_text().split("### Outside pytest: a receiver of your own", 1)[1]
    found = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert found, "docs/testing.md lost its receiver script"
    return found.group(1)


def test_the_documented_receiver_script_saves_the_apps_trace(tmp_path: Path) -> None:
    script = tmp_path / "collect.py"
    script.write_text(documented_script())
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=400,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "adk-otel tree traces.jsonl\n"
    records = read_records([str(tmp_path / "traces.jsonl")])
    assert any(record.name == "invocation shop" for record in records)
    assert {record.service for record in records} == {"adk-otel-demo"}
