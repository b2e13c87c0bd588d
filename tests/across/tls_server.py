"""The payments agent served as docs/across-services.md serves it between two
hosts: ``to_a2a`` advertising the public URL (``PROTOCOL://HOST:port``, not
the address it binds), uvicorn with a TLS certificate for HOST (plain http
without CERT and KEY).

``python tls_server.py HOST PROTOCOL [CERT KEY]`` listens on a free loopback
port, prints ``PORT n`` and serves until terminated; spans go over OTLP as
the ``OTEL_*`` variables say.
"""

from __future__ import annotations

import asyncio
import sys
import warnings

warnings.filterwarnings("ignore")

import uvicorn  # noqa: E402
from google.adk.a2a.utils.agent_to_a2a import to_a2a  # noqa: E402
from google.adk.runners import InMemoryRunner  # noqa: E402

import adk_otel  # noqa: E402
from adk_otel.cli.demo_remote import SERVICE_APP, loopback_socket, payments_agent  # noqa: E402


def main(host: str, protocol: str, cert: str | None = None, key: str | None = None) -> None:
    sock = loopback_socket()
    port = sock.getsockname()[1]
    agent = payments_agent()
    runner = adk_otel.instrument(InMemoryRunner(agent=agent, app_name=SERVICE_APP))
    app = to_a2a(agent, host=host, port=port, protocol=protocol, runner=runner)
    config = uvicorn.Config(
        app, log_level="warning", lifespan="on", ssl_certfile=cert, ssl_keyfile=key
    )
    print(f"PORT {port}", flush=True)
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


if __name__ == "__main__":
    main(*sys.argv[1:5])
