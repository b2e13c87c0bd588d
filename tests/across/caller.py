"""The calling service of the cross-service tests: a checkout agent whose
``payments`` sub-agent is remote (``RemoteA2aAgent``), traced with
``adk_otel.instrument()`` and configured only by ``OTEL_*``, as a real service.

``python caller.py URL MESSAGE [--no-stream] [--metadata JSON [--keep-trace]]
[--resolve NAME]``
runs one invocation (``--metadata``: the remote agent gets an
``a2a_request_meta_provider`` returning that metadata, wrapped with
``adk_otel.a2a.with_trace_context`` under ``--keep-trace``; ``--resolve``:
host NAME is this machine, every other host unreachable, as for a caller on
another host whose DNS knows only NAME), prints a
JSON report (the run's error, the plugin's open spans, the current span left
behind) and exits; adk-otel's provider flushes its spans at exit.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import warnings
from collections.abc import Callable

warnings.filterwarnings("ignore")
logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

import httpx  # noqa: E402
from a2a.client import ClientConfig, ClientFactory  # noqa: E402
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH  # noqa: E402
from google.adk.agents import SequentialAgent  # noqa: E402
from google.adk.agents.remote_a2a_agent import RemoteA2aAgent  # noqa: E402
from google.adk.runners import InMemoryRunner  # noqa: E402
from google.genai import types  # noqa: E402
from report import after_run  # noqa: E402

import adk_otel  # noqa: E402
import adk_otel.a2a  # noqa: E402


def meta_provider(metadata: dict[str, object], keep_trace: bool) -> Callable[..., dict]:
    def provide(ctx: object, message: object) -> dict[str, object]:
        return dict(metadata)

    return adk_otel.a2a.with_trace_context(provide) if keep_trace else provide


class OnlyHost(httpx.AsyncBaseTransport):
    """Connects host ``name`` to this machine, keeping the name for TLS (SNI,
    certificate check) and the Host header; refuses every other host."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._transport = httpx.AsyncHTTPTransport()  # CAs: default, or SSL_CERT_FILE

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.host != self._name:
            raise httpx.ConnectError(f"{request.url.host} is not reachable", request=request)
        request.extensions["sni_hostname"] = self._name
        request.url = request.url.copy_with(host="127.0.0.1")
        return await self._transport.handle_async_request(request)

    async def aclose(self) -> None:
        await self._transport.aclose()


async def main(
    url: str,
    message: str,
    streaming: bool,
    metadata: dict | None,
    keep_trace: bool,
    resolve: str | None = None,
) -> dict[str, object]:
    transport = OnlyHost(resolve) if resolve else None
    # httpx's default 5 s is short for a served agent's first run on a busy machine.
    client = httpx.AsyncClient(transport=transport, timeout=60)
    factory = ClientFactory(ClientConfig(streaming=streaming, httpx_client=client))
    payments = RemoteA2aAgent(
        name="payments",
        # A service URL, or the path of an agent card file.
        agent_card=url + AGENT_CARD_WELL_KNOWN_PATH if "://" in url else url,
        a2a_client_factory=factory,
        a2a_request_meta_provider=(
            meta_provider(metadata, keep_trace) if metadata is not None else None
        ),
    )
    checkout = SequentialAgent(name="checkout", sub_agents=[payments])
    runner = adk_otel.instrument(InMemoryRunner(agent=checkout, app_name="shop"))
    session = await runner.session_service.create_session(app_name="shop", user_id="u")
    report: dict[str, object] = {"error": None, "texts": [], "error_messages": []}
    try:
        async for event in runner.run_async(
            user_id="u", session_id=session.id, new_message=types.UserContent(message)
        ):
            texts = [p.text for p in (event.content.parts if event.content else []) if p.text]
            report["texts"].extend(texts)  # type: ignore[union-attr]
            if event.error_message:
                report["error_messages"].append(event.error_message)  # type: ignore[union-attr]
    except Exception as exc:
        report["error"] = f"{type(exc).__name__}: {exc}"
    after_run(runner, report)
    await runner.close()
    return report


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("message")
    parser.add_argument("--no-stream", action="store_true")
    parser.add_argument("--metadata", type=json.loads)
    parser.add_argument("--keep-trace", action="store_true")
    parser.add_argument("--resolve")
    args = parser.parse_args()
    report = asyncio.run(
        main(
            args.url,
            args.message,
            not args.no_stream,
            args.metadata,
            args.keep_trace,
            args.resolve,
        )
    )
    print(json.dumps(report), flush=True)
