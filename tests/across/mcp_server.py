"""An MCP tool server built with the ``mcp`` package (no ADK): a ``stock``
tool over streamable HTTP, with an SDK tracer provider configured by
``OTEL_*``, as the docs tell an MCP server's owner to set it up.

The ``mcp`` package 2.x continues the trace context a client sends in the
request's ``_meta`` and wraps each call in a SERVER span; the tool's own span
nests under it. With ``mcp`` 1.x the tool continues the context itself, the
few lines docs/across-services.md shows. Prints ``PORT n`` once listening.
"""

from __future__ import annotations

import os
import sys
import warnings

warnings.filterwarnings("ignore")

import contextlib  # noqa: E402

from opentelemetry import propagate, trace  # noqa: E402
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import BatchSpanProcessor  # noqa: E402

from adk_otel.cli.demo_remote import loopback_socket, serve_on  # noqa: E402

try:
    from mcp.server.mcpserver import Context, MCPServer

    CONTINUES_TRACE = True  # mcp 2.x: its server spans continue _meta's context
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import Context
    from mcp.server.fastmcp import FastMCP as MCPServer

    CONTINUES_TRACE = False

provider = TracerProvider(resource=Resource.create())
provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
trace.set_tracer_provider(provider)
tracer = trace.get_tracer("stock-service")

server = MCPServer("stock")


def continued(ctx: Context) -> contextlib.AbstractContextManager:
    """mcp 1.x: a SERVER span continuing the caller's trace from ``_meta``."""
    if CONTINUES_TRACE:
        return contextlib.nullcontext()
    meta = ctx.request_context.meta
    carrier = meta.model_dump() if meta is not None else {}
    return tracer.start_as_current_span(
        "tools/call stock", context=propagate.extract(carrier), kind=trace.SpanKind.SERVER
    )


@server.tool()
def stock(sku: str, ctx: Context) -> dict:
    """Units in stock for one SKU."""
    with continued(ctx), tracer.start_as_current_span("stock query"):
        if sku == "GONE":
            raise ValueError(f"no such sku: {sku}")
        if sku == "DIE":
            os._exit(1)  # the server process dies mid-call
        return {"sku": sku, "in_stock": 3}


def main() -> None:
    serve_on(server.streamable_http_app(), loopback_socket())


if __name__ == "__main__":
    sys.exit(main())
