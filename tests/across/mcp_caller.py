"""An agent whose tool lives on an MCP server (``McpToolset`` over streamable
HTTP), traced with ``adk_otel.instrument()`` and configured by ``OTEL_*``.

``python mcp_caller.py URL SKU [READ_TIMEOUT]`` runs one invocation (the scripted model calls
``stock`` with SKU, then answers) and prints a JSON report.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import warnings

warnings.filterwarnings("ignore")
logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

from google.adk.agents import LlmAgent  # noqa: E402
from google.adk.runners import InMemoryRunner  # noqa: E402
from google.adk.tools.mcp_tool.mcp_session_manager import (  # noqa: E402
    StreamableHTTPConnectionParams,
)
from google.adk.tools.mcp_tool.mcp_toolset import McpToolset  # noqa: E402
from google.genai import types  # noqa: E402
from report import after_run  # noqa: E402

import adk_otel  # noqa: E402
from adk_otel.testing.model import ScriptedModel, call, reply  # noqa: E402


async def main(url: str, sku: str, read_timeout: float | None = None) -> dict[str, object]:
    params = StreamableHTTPConnectionParams(url=url)
    if read_timeout is not None:
        params = StreamableHTTPConnectionParams(
            url=url, timeout=read_timeout, sse_read_timeout=read_timeout
        )
    tools = McpToolset(connection_params=params)
    agent = LlmAgent(
        name="clerk",
        model=ScriptedModel(script=[call("stock", {"sku": sku}), reply("checked")]),
        tools=[tools],
    )
    runner = adk_otel.instrument(InMemoryRunner(agent=agent, app_name="shop"))
    session = await runner.session_service.create_session(app_name="shop", user_id="u")
    report: dict[str, object] = {"error": None}
    try:
        async for _ in runner.run_async(
            user_id="u", session_id=session.id, new_message=types.UserContent("stock?")
        ):
            pass
    except Exception as exc:
        report["error"] = f"{type(exc).__name__}: {exc}"
    after_run(runner, report)
    await tools.close()
    await runner.close()
    return report


if __name__ == "__main__":
    timeout = float(sys.argv[3]) if len(sys.argv) > 3 else None
    print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2], timeout))), flush=True)
