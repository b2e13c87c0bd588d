"""Real ADK server processes for the zero-code tests: ``adk web``, ``adk
api_server`` and a user's ``main.py`` serving ``get_fast_api_app(...)`` under
uvicorn, each with ``--extra_plugins adk_otel.AdkOtelPlugin`` (or its
``extra_plugins=`` argument) and exporting over OTLP to a test receiver."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from adk_otel.cli.demo_remote import stop
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

WORKFLOW = textwrap.dedent(
    """
    from google.adk.agents import LlmAgent
    from google.adk.workflow import Workflow
    from opentelemetry import trace
    from adk_otel.testing.model import ScriptedModel, reply

    def prepare() -> str:
        with trace.get_tracer("the-application").start_as_current_span("application work"):
            return "ready"

    root_agent = Workflow(
        name="flow",
        edges=[
            ("START", prepare, LlmAgent(name="clerk", model=ScriptedModel(script=[reply("ok")])))
        ],
    )
    """
)
"""A workflow app: a function node (opening a span of its own), then an agent node."""

MAIN = textwrap.dedent(
    """
    import os

    from google.adk.cli.fast_api import get_fast_api_app

    app = get_fast_api_app(
        agents_dir=os.environ["AGENTS_DIR"],
        web=False,
        extra_plugins=["adk_otel.AdkOtelPlugin"],
    )
    """
)

KINDS = ("web", "api_server", "main_py")


def write_agents(root: Path, agent: str = AGENT) -> Path:
    """An agents directory with one app, ``shop``: an agent calling one tool
    (or the source ``agent``)."""
    agents = root / "agents"
    (agents / "shop").mkdir(parents=True)
    (agents / "shop" / "__init__.py").write_text("from . import agent\n")
    (agents / "shop" / "agent.py").write_text(agent)
    return agents


def command(kind: str, agents: Path) -> list[str]:
    bin_dir = Path(sys.executable).parent
    listen = ["--host", "127.0.0.1", "--port", "0"]
    if kind == "main_py":
        (agents.parent / "main.py").write_text(MAIN)
        return [sys.executable, "-m", "uvicorn", "main:app", *listen]
    subcommand = "web" if kind == "web" else "api_server"
    plugin = ["--extra_plugins", "adk_otel.AdkOtelPlugin"]
    return [str(bin_dir / "adk"), subcommand, *listen, *plugin, str(agents)]


@dataclass
class Server:
    url: str
    log: list[str] = field(default_factory=list)

    def run(self, client: httpx.Client, message: str = "hi") -> tuple[str, list[dict]]:
        """One run in a new session: its session id and its events."""
        session = client.post(f"{self.url}/apps/shop/users/u/sessions", json={})
        session.raise_for_status()
        session_id = session.json()["id"]
        run = client.post(
            f"{self.url}/run",
            json={
                "appName": "shop",
                "userId": "u",
                "sessionId": session_id,
                "newMessage": {"role": "user", "parts": [{"text": message}]},
            },
        )
        run.raise_for_status()
        return session_id, run.json()


@contextmanager
def serving(
    kind: str, root: Path, receiver: OtlpReceiver, agent: str = AGENT, **env: str
) -> Iterator[Server]:
    """The server of ``kind`` listening on a free loopback port; stopped after."""
    agents = write_agents(root, agent)
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "ADK_OTEL_"))}
    process = subprocess.Popen(
        command(kind, agents),
        cwd=root,
        env={
            **clean,
            "AGENTS_DIR": str(agents),
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.http_endpoint.removesuffix("/v1/traces"),
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            "OTEL_BSP_SCHEDULE_DELAY": "50",
            **env,
        },
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    server = Server("")
    for line in process.stderr:  # uvicorn names the port it bound once it listens
        server.log.append(line)
        if match := re.search(r"Uvicorn running on http://[\d.]+:(\d+)", line):
            server.url = f"http://127.0.0.1:{match.group(1)}"
            break
    else:
        stop(process)
        raise AssertionError(f"{kind} did not start: {''.join(server.log)[-3000:]}")
    stderr = process.stderr
    drain = threading.Thread(target=lambda: server.log.extend(stderr), daemon=True)
    drain.start()
    try:
        yield server
    finally:
        stop(process)
        drain.join(timeout=30)
