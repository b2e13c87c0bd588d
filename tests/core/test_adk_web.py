"""`adk web --extra_plugins adk_otel.AdkOtelPlugin`: our spans, and ADK's panel still works."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

AGENT = textwrap.dedent(
    '''
    from google.adk.agents import LlmAgent
    from adk_otel.testing.model import ScriptedModel, call, reply

    def lookup(sku: str) -> dict:
        """Stock for a SKU."""
        return {"sku": sku}

    root_agent = LlmAgent(
        name="clerk",
        model=ScriptedModel(script=[call("lookup", {"sku": "A1"}), reply("ok")]),
        tools=[lookup],
    )
    '''
)


def test_adk_web_panel_keeps_working_with_the_plugin(tmp_path: Path):
    package = tmp_path / "agents" / "shop"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("from . import agent\n")
    (package / "agent.py").write_text(AGENT)

    probe = Path(__file__).with_name("adk_web_probe.py")
    done = subprocess.run(
        [sys.executable, str(probe), str(tmp_path / "agents")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["run"] == 200 and result["panel"] == 200
    spans = result["spans"]

    adk_own = [s for s in spans if "gcp.vertex.agent.event_id" in s["attributes"]]
    assert adk_own, "ADK's panel lost its own spans"
    ours = {s["name"]: s["attributes"] for s in spans if "adk.outcome" in s["attributes"]}
    assert ours["invocation shop"]["adk.outcome"] == "ok"
    assert ours["execute_tool lookup"]["adk.outcome"] == "ok"
    assert ours["invoke_agent clerk"]["adk.outcome"] == "ok"
