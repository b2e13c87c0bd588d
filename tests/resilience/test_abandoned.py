"""A run left in flight when the process exits (its event loop stopped or
closed mid-run): adk-otel ends its spans at exit, before the provider's final
flush, so they reach the collector as ``incomplete`` (``process_exit``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "abandoned.py"


def test_spans_of_a_run_left_in_flight_are_ended_at_exit(receiver) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "ADK_OTEL_"))}
    env |= {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": receiver.http_endpoint}
    done = subprocess.run(
        [sys.executable, str(SCRIPT)], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "LEFT IN FLIGHT" in done.stdout
    spans = receiver.wait_for(4, timeout=15)
    outcomes = {
        s.name: {a.key: a.value.string_value for a in s.attributes if a.key.startswith("adk.")}
        for s in spans
    }
    assert set(outcomes) == {
        "invocation shop",
        "invoke_agent clerk",
        "generate_content scripted-model",
        "execute_tool slow_lookup",
    }
    assert outcomes["generate_content scripted-model"]["adk.outcome"] == "ok"
    for name in ("invocation shop", "invoke_agent clerk", "execute_tool slow_lookup"):
        assert outcomes[name]["adk.outcome"] == "incomplete", name
    assert outcomes["invocation shop"]["adk.close_reason"] == "process_exit"
