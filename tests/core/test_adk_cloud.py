"""``--trace_to_cloud`` / ``--otel_to_cloud``: ADK installs its own provider and
Cloud Trace processors; adk-otel's spans go through them, once each, and ADK's
own spans stay off. Cloud Trace is out of reach: the probe replaces only the
exporter ADK sends to (and its credentials lookup) with in-memory stand-ins."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from adk_otel.semconv import ADK_SCOPE, INSTRUMENTATION_SCOPE

from .servers import write_agents

ONE_PER_LAYER = {
    "invocation shop": 1,
    "invoke_agent clerk": 1,
    "generate_content scripted-model": 2,
    "execute_tool lookup": 1,
}


@pytest.mark.parametrize("flag", ["trace_to_cloud", "otel_to_cloud"])
def test_our_spans_go_once_through_the_cloud_exporter_adk_set_up(tmp_path: Path, flag: str):
    agents = write_agents(tmp_path)
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "ADK_OTEL_"))}
    done = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("cloud_probe.py")), str(agents), flag],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=tmp_path,
        env={**clean, "GOOGLE_CLOUD_PROJECT": "test-project"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Failed to detach context" not in done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["run"] == 200
    spans = result["spans"]
    ours = Counter(s["name"] for s in spans if s["scope"] == INSTRUMENTATION_SCOPE)
    assert ours == Counter(ONE_PER_LAYER)
    assert len({s["id"] for s in spans}) == len(spans)  # each exported once
    assert not [s for s in spans if s["scope"] == ADK_SCOPE]
