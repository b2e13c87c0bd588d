"""A payments agent served over A2A (``to_a2a``) whose process dies in the
middle of a call: its ``charge_card`` tool exits the process, so the caller's
streamed A2A response breaks off. Prints ``PORT n`` once listening."""

from __future__ import annotations

import os
import warnings
from typing import Any

warnings.filterwarnings("ignore")

from google.adk.a2a.utils.agent_to_a2a import to_a2a  # noqa: E402
from google.adk.agents import LlmAgent  # noqa: E402
from google.adk.runners import InMemoryRunner  # noqa: E402

from adk_otel.cli.demo_remote import loopback_socket, serve_on  # noqa: E402
from adk_otel.testing.model import ScriptedModel, call  # noqa: E402


def charge_card(amount_eur: float) -> dict[str, Any]:
    """Charge the customer's card (this service crashes instead)."""
    os._exit(1)


def main() -> None:
    agent = LlmAgent(
        name="payments",
        description="Takes payment.",
        model=ScriptedModel(script=[call("charge_card", {"amount_eur": 19.9})]),
        tools=[charge_card],
    )
    sock = loopback_socket()
    runner = InMemoryRunner(agent=agent, app_name="payments-service")
    serve_on(to_a2a(agent, host="127.0.0.1", port=sock.getsockname()[1], runner=runner), sock)


if __name__ == "__main__":
    main()
