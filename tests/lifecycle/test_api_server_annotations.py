"""``adk api_server --extra_plugins adk_otel.AdkOtelPlugin`` as a real process:
the app's own plugin (listed before adk-otel, which ``--extra_plugins``
appends) and the agent's callbacks annotate the span of their layer, and the
annotations are exported, over OTLP, on adk-otel's spans only."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import urllib.request
from pathlib import Path
from typing import Any

from adk_otel.testing.receiver import OtlpReceiver, poll_until

AGENT = textwrap.dedent(
    '''
    from google.adk.agents import LlmAgent
    from google.adk.apps import App
    from google.adk.plugins.base_plugin import BasePlugin
    from opentelemetry import trace
    from adk_otel.testing.model import ScriptedModel, call, reply

    def lookup(sku: str) -> dict:
        """Stock for a SKU."""
        trace.get_current_span().set_attribute("app.tool.body", True)
        return {"sku": sku}

    def mark(kind):
        def callback(*args, **kwargs):
            trace.get_current_span().set_attribute(f"app.agent.{kind}", True)
        return callback

    class Annotator(BasePlugin):
        def __init__(self):
            super().__init__(name="annotator")

    for hook in ("before_agent", "after_agent", "before_model", "after_model",
                 "before_tool", "after_tool"):
        async def annotate(self, _hook=hook, **kwargs):
            trace.get_current_span().set_attribute(f"app.plugin.{_hook}", True)
        setattr(Annotator, f"{hook}_callback", annotate)

    root_agent = LlmAgent(
        name="clerk",
        model=ScriptedModel(script=[call("lookup", {"sku": "A1"}), reply("ok")]),
        tools=[lookup],
        **{f"{kind}_callback": mark(kind) for kind in (
            "before_agent", "after_agent", "before_model", "after_model",
            "before_tool", "after_tool")},
    )
    app = App(name="shop", root_agent=root_agent, plugins=[Annotator()])
    '''
)

LAYER = {"agent": "invoke_agent clerk", "model": "generate_content scripted-model"}
LAYER["tool"] = "execute_tool lookup"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def post(url: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read() or b"null")


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def test_api_server_extra_plugins_annotations_land_on_their_layer(tmp_path: Path):
    package = tmp_path / "agents" / "shop"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("from . import agent\n")
    (package / "agent.py").write_text(AGENT)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    adk = str(Path(sys.executable).with_name("adk"))
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "ADK_OTEL_"))}
    with OtlpReceiver() as receiver:
        env = {
            **clean,
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.http_endpoint.removesuffix("/v1/traces"),
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            "OTEL_BSP_SCHEDULE_DELAY": "100",
        }
        command = [adk, "api_server", "--host", "127.0.0.1", "--port", str(port)]
        command += ["--extra_plugins", "adk_otel.AdkOtelPlugin", str(tmp_path / "agents")]
        server = subprocess.Popen(
            command,
            cwd=tmp_path,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            poll_until(lambda: answers(f"{base}/list-apps"), 90, "adk api_server to answer")
            post(f"{base}/apps/shop/users/u1/sessions/s1", {})
            events = post(
                f"{base}/run",
                {
                    "app_name": "shop",
                    "user_id": "u1",
                    "session_id": "s1",
                    "new_message": {"role": "user", "parts": [{"text": "stock of A1?"}]},
                },
            )
            assert events, "the run produced no events"
            spans = receiver.wait_for(
                lambda got: any(s.name == "invocation shop" for s in got), timeout=60
            )
        finally:
            server.send_signal(signal.SIGINT)
            try:
                server.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.communicate()

    ours = [s for s in spans if any(a.key == "adk.outcome" for a in s.attributes)]
    names = [s.name for s in ours]
    for who in ("plugin", "agent"):
        for layer, span_name in LAYER.items():
            for hook in (f"before_{layer}", f"after_{layer}"):
                key = f"app.{who}.{hook}"
                holders = [s.name for s in spans if any(a.key == key for a in s.attributes)]
                expected = names.count(span_name)
                assert holders == [span_name] * expected, f"{key}: on {holders}; ours: {names}"
    tool_body = [s.name for s in spans if any(a.key == "app.tool.body" for a in s.attributes)]
    assert tool_body == [LAYER["tool"]]
