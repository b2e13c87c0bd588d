"""``adk-otel demo --remote``: the demo's payments agent as a service of its own.

``python -m adk_otel.cli.demo_remote`` serves a payments agent over A2A (ADK's
``to_a2a`` under uvicorn, on a free loopback port it prints as ``PORT n``),
traced with ``adk_otel.instrument()`` and configured only by the standard
``OTEL_*`` variables, as a real service would be. The charge is declined for
amounts over 1000 EUR (``ADK_OTEL_DEMO_DECLINE_OVER_EUR``; the demo starts it
with a limit below the mug's price, so the remote charge of 19.9 EUR is
declined as the local demo's is).

The demo (and the cross-service tests) call it from another process through
ADK's ``RemoteA2aAgent``; both processes export to the same receiver, and the
trace is one tree across them.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

SERVICE_APP = "payments-service"
DECLINE_OVER_EUR = 1000.0
DECLINE_OVER_ENV = "ADK_OTEL_DEMO_DECLINE_OVER_EUR"


def _decline_over() -> float:
    try:
        return float(os.environ.get(DECLINE_OVER_ENV, DECLINE_OVER_EUR))
    except ValueError:
        return DECLINE_OVER_EUR


class PaymentDeclined(RuntimeError):
    """The card was declined."""


def charge_card(amount_eur: float) -> dict[str, Any]:
    """Charge the customer's card."""
    if amount_eur > _decline_over():
        raise PaymentDeclined(f"card declined for {amount_eur} EUR")
    return {"charged_eur": amount_eur, "receipt": "R-1001"}


def payments_agent() -> Any:
    """An agent that charges the amount named in the request, then confirms."""
    import re

    from google.adk.agents import LlmAgent

    from ..testing.model import ScriptedModel, call, reply

    def choose(llm_request: Any) -> Any:
        contents = list(getattr(llm_request, "contents", None) or ())
        if contents and any(p.function_response for p in contents[-1].parts or ()):
            return reply("payment taken")
        text = " ".join(p.text or "" for c in contents for p in c.parts or () if p.text)
        amounts = re.findall(r"\d+(?:\.\d+)?", text)
        return call("charge_card", {"amount_eur": float(amounts[-1]) if amounts else 19.9})

    return LlmAgent(
        name="payments",
        description="Takes payment.",
        model=ScriptedModel(choose=choose),
        tools=[charge_card],
    )


def serve() -> None:
    """Serve the payments agent over A2A until terminated."""
    import warnings

    warnings.filterwarnings("ignore")
    from google.adk.a2a.utils.agent_to_a2a import to_a2a
    from google.adk.runners import InMemoryRunner

    import adk_otel

    os.environ.setdefault("OTEL_SERVICE_NAME", SERVICE_APP)
    sock = loopback_socket()
    agent = payments_agent()
    runner = adk_otel.instrument(InMemoryRunner(agent=agent, app_name=SERVICE_APP))
    app = to_a2a(agent, host="127.0.0.1", port=sock.getsockname()[1], runner=runner)
    serve_on(app, sock)


def loopback_socket() -> socket.socket:
    """A listening socket on a free loopback port (the app may need the port first)."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    return sock


def serve_on(app: Any, sock: socket.socket) -> None:
    """Serve an ASGI app with uvicorn on ``sock`` until terminated, after
    printing ``PORT n`` (connections queue until uvicorn accepts them), the
    line :func:`start_listening` waits for."""
    import asyncio

    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    asyncio.run(server.serve(sockets=[sock]))


@dataclass
class Service:
    """A running payments service process."""

    process: subprocess.Popen[str]
    url: str

    def stop(self) -> int:
        """Terminate it (uvicorn shuts down gracefully, then re-raises the
        signal: -15 is a clean stop); the exit code."""
        return stop(self.process)


def stop(process: subprocess.Popen[str]) -> int:
    """Terminate a server process, killing it if it hangs; its exit code."""
    if process.poll() is None:
        process.terminate()
    try:
        return process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.wait()


def start_service(env: Mapping[str, str] | None = None, stderr: Any = None) -> Service:
    """Start ``python -m adk_otel.cli.demo_remote``; returns once it listens.
    ``stderr``: where its log goes (a file, ``subprocess.DEVNULL``; default: ours)."""
    # Imported, not run as __main__, so its exceptions carry their real module name.
    serve_command = "from adk_otel.cli.demo_remote import serve; serve()"
    process, port = start_listening(["-c", serve_command], env, stderr)
    return Service(process, f"http://127.0.0.1:{port}")


def start_listening(
    args: list[str], env: Mapping[str, str] | None = None, stderr: Any = None
) -> tuple[subprocess.Popen[str], int]:
    """Start ``python ARGS``, a server that prints ``PORT n`` once it listens."""
    process = subprocess.Popen(
        [sys.executable, *args],
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.startswith("PORT "):
        process.kill()
        raise RuntimeError(
            f"{' '.join(args)} did not start (exit code {process.wait()}); "
            "is a2a-sdk installed? pip install 'adk-otel[a2a]'"
        )
    return process, int(line.split()[1])


if __name__ == "__main__":
    serve()
