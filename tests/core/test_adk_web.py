"""`adk web --extra_plugins adk_otel.AdkOtelPlugin`: our spans, and ADK's panel still works."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from adk_otel.testing.receiver import OtlpReceiver

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


def run_adk_web(tmp_path: Path, env: dict[str, str] | None = None) -> dict:
    """One run through ADK's web server app in a fresh process; its result."""
    package = tmp_path / "agents" / "shop"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("from . import agent\n")
    (package / "agent.py").write_text(AGENT)
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "ADK_OTEL_"))}
    probe = Path(__file__).with_name("adk_web_probe.py")
    done = subprocess.run(
        [sys.executable, str(probe), str(tmp_path / "agents")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**clean, **(env or {})},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_adk_web_panel_keeps_working_with_the_plugin(tmp_path: Path):
    """ADK's own spans are off; the panel is drawn from adk-otel's, each model
    and tool span joined to its event."""
    result = run_adk_web(tmp_path)
    assert result["run"] == 200 and result["panel"] == 200
    spans = result["spans"]

    assert not [s for s in spans if s["name"].startswith("invoke_workflow")]
    joined = [s["name"] for s in spans if "gcp.vertex.agent.event_id" in s["attributes"]]
    assert sorted(joined) == ["execute_tool lookup"] + ["generate_content scripted-model"] * 2
    ours = {s["name"]: s["attributes"] for s in spans if "adk.outcome" in s["attributes"]}
    assert ours["invocation shop"]["adk.outcome"] == "ok"
    assert ours["execute_tool lookup"]["adk.outcome"] == "ok"
    assert ours["invoke_agent clerk"]["adk.outcome"] == "ok"


def test_under_adk_web_our_spans_reach_the_collector(tmp_path: Path):
    """`adk web` builds the global provider from OTEL_EXPORTER_OTLP_ENDPOINT;
    adk-otel's spans go out through it, and ADK's own do not."""
    with OtlpReceiver() as receiver:
        run_adk_web(
            tmp_path,
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.http_endpoint.removesuffix("/v1/traces"),
                "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            },
        )
        # The server process has exited: its provider flushed at exit.
        spans = receiver.spans()

    outcomes = {
        span.name: attribute.value.string_value
        for span in spans
        for attribute in span.attributes
        if attribute.key == "adk.outcome"
    }
    assert not [span for span in spans if span.name.startswith("invoke_workflow")]
    assert outcomes == {
        "invocation shop": "ok",
        "invoke_agent clerk": "ok",
        "generate_content scripted-model": "ok",
        "execute_tool lookup": "ok",
    }
