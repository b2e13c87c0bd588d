"""fork() after instrument() with the built-in pipeline (gunicorn --preload):
each process counts and reports only its own spans."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "forking.py"


def test_a_forked_child_counts_only_its_own_spans(receiver) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "ADK_OTEL_"))}
    env |= {
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": receiver.http_endpoint,
        "OTEL_BSP_SCHEDULE_DELAY": "20",
    }
    done = subprocess.run(
        [sys.executable, str(SCRIPT)], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    reports = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " {" in line)
    child, parent = json.loads(reports["CHILD"]), json.loads(reports["PARENT"])
    assert child == {"ended": 8, "exported": 8, "failed": 0, "unsent": 0}
    assert parent == {"ended": 8, "exported": 8, "failed": 0, "unsent": 0}
    assert "not exported" not in done.stderr
    assert len(receiver.wait_for(16, timeout=15)) == 16
