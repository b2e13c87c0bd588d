"""The served agent: one tool call, then a reply (5 adk-otel spans a run).

``SERVING_MODEL_DELAY`` (seconds) holds the first model call, so a test can
stop the server while runs are in flight; each run prints ``RUN STARTED`` on
stderr when it reaches the agent."""

import os
import sys
from typing import Any

from google.adk.agents import LlmAgent

from adk_otel.testing.model import ScriptedModel, call, reply

DELAY = float(os.environ.get("SERVING_MODEL_DELAY", "0"))


def lookup(sku: str) -> dict[str, Any]:
    """Stock level of one SKU."""
    return {"sku": sku, "in_stock": 3}


def _started(callback_context: Any) -> None:
    print("RUN STARTED", file=sys.stderr, flush=True)


root_agent = LlmAgent(
    name="clerk",
    model=ScriptedModel(script=[call("lookup", {"sku": "A1"}, delay=DELAY), reply("3 in stock")]),
    tools=[lookup],
    before_agent_callback=_started,
)
