"""``adk-otel demo``: a small multi-agent shop, traced end to end, offline.

A Sequential pipeline of three agents runs on a scripted model: a catalog
agent looks an item up, a payments agent charges a card (the tool fails: the
card is declined), and a notifier that therefore never runs. The trace tree
is printed; the failure shows as ERROR with ``error.type`` on the tool, each
agent above it and the invocation. No network and no API key are needed.

With ``OTEL_EXPORTER_OTLP_ENDPOINT`` set, the same spans also go over OTLP
(e.g. to the collector of ``docker compose up``); ``--json FILE`` writes them
as the collector's file exporter would, for ``adk-otel tree`` / ``check``
(replacing FILE; ``--append`` adds this run's trace to it).

``--remote`` runs the payments agent as a service of its own in a second
process, over A2A (``demo_remote.py``): the printed tree is one trace across
both processes, the remote charge declined on the far side.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import subprocess
import sys
from collections.abc import Sequence
from typing import IO, Any

APP_NAME = "shop"
PRICE = "19.90 EUR"
"""What the catalog quotes for the mug, in both demos."""


class PaymentDeclined(RuntimeError):
    """The card was declined."""


def lookup_item(sku: str) -> dict[str, Any]:
    """Price and stock of an item."""
    return {"sku": sku, "price_eur": 19.9, "in_stock": True}


def charge_card(amount_eur: float) -> dict[str, Any]:
    """Charge the customer's card."""
    raise PaymentDeclined(f"card declined for {amount_eur} EUR")


def build_remote_app(payments_url: str) -> Any:
    """The ``--remote`` demo's ``App``: catalog -> payments, the payments agent
    served by another process over A2A, which declines the card as the
    local demo's payments agent does."""
    from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH
    from google.adk.agents import SequentialAgent
    from google.adk.agents.remote_a2a_agent import RemoteA2aAgent
    from google.adk.apps import App

    payments = RemoteA2aAgent(
        name="payments",
        description="Takes payment (a remote service).",
        agent_card=payments_url + AGENT_CARD_WELL_KNOWN_PATH,
    )
    pipeline = SequentialAgent(name="checkout", sub_agents=[_catalog(PRICE), payments])
    return App(name=APP_NAME, root_agent=pipeline)


def _catalog(price: str) -> Any:
    """The catalog agent: looks the mug up, answers ``price``."""
    from google.adk.agents import LlmAgent

    from ..testing.model import ScriptedModel, call, reply

    return LlmAgent(
        name="catalog",
        description="Finds items and prices.",
        model=ScriptedModel(script=[call("lookup_item", {"sku": "MUG-1"}), reply(price)]),
        tools=[lookup_item],
    )


def build_app() -> Any:
    """The demo's ``App``: catalog -> payments -> notifier."""
    from google.adk.agents import LlmAgent, SequentialAgent
    from google.adk.apps import App

    from ..testing.model import ScriptedModel, call, reply

    payments = LlmAgent(
        name="payments",
        description="Takes payment.",
        model=ScriptedModel(script=[call("charge_card", {"amount_eur": 19.9}), reply("paid")]),
        tools=[charge_card],
    )
    notifier = LlmAgent(
        name="notifier",
        description="Confirms the order.",
        model=ScriptedModel(script=[reply("order confirmed")]),
    )
    pipeline = SequentialAgent(name="checkout", sub_agents=[_catalog(PRICE), payments, notifier])
    return App(name=APP_NAME, root_agent=pipeline)


async def run_once(app: Any) -> BaseException | None:
    """One invocation of ``app``; the run's exception is returned, not raised."""
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    runner = InMemoryRunner(app=app)
    session = await runner.session_service.create_session(app_name=APP_NAME, user_id="demo")
    events = runner.run_async(
        user_id="demo", session_id=session.id, new_message=types.UserContent("buy a mug")
    )
    try:
        async with contextlib.aclosing(events):
            async for _ in events:
                pass
    except Exception as exc:
        return exc
    finally:
        await runner.close()
    return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="adk-otel demo",
        description=(__doc__ or "").replace("``", ""),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--json", metavar="FILE", help="also write the trace as OTLP JSON (FILE is replaced)"
    )
    parser.add_argument(
        "--append", action="store_true", help="with --json: add to FILE instead of replacing it"
    )
    parser.add_argument(
        "--remote",
        action="store_true",
        help="serve the payments agent from a second process over A2A (needs a2a-sdk)",
    )
    args = parser.parse_args(argv)
    if args.append and not args.json:
        parser.error("--append needs --json FILE")
    json_file = None
    if args.json:  # checked before the demo runs, not after
        try:
            json_file = open(args.json, "a" if args.append else "w", encoding="utf-8")  # noqa: SIM115
        except OSError as exc:
            print(
                f"adk-otel demo: error: --json {args.json}: cannot write ({exc.strerror or exc})",
                file=sys.stderr,
            )
            return 2
    try:
        return _run(args, json_file)
    finally:
        if json_file is not None:
            json_file.close()


def _run(args: argparse.Namespace, json_file: IO[str] | None) -> int:

    import warnings

    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", message=r"\[EXPERIMENTAL\]", category=UserWarning)

    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    import adk_otel

    from ..pipeline.provider import build_tracer_provider
    from ..traces.render import render_tree

    os.environ.setdefault("OTEL_SERVICE_NAME", "adk-otel-demo")
    endpoint = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get(
        "OTEL_EXPORTER_OTLP_ENDPOINT"
    )
    # Offline unless an endpoint is asked for: no collector, no retries.
    provider = build_tracer_provider() if endpoint else TracerProvider(resource=Resource.create())
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    if args.remote:
        try:
            import a2a.client  # noqa: F401 - the A2A SDK, for RemoteA2aAgent and to_a2a
        except ImportError:
            print("adk-otel demo --remote needs the A2A SDK: pip install 'adk-otel[a2a]'")
            return 2
        return _run_remote(provider, memory, json_file, endpoint)
    app = adk_otel.instrument(build_app(), tracer_provider=provider)

    error = asyncio.run(run_once(app))
    provider.force_flush(5_000)
    spans = memory.get_finished_spans()
    print(render_tree(spans, color=sys.stdout.isatty()))
    if error is not None:
        print(f"\nrun failed as scripted: {type(error).__name__}: {error}")
    if endpoint:
        print(_export_report(provider, endpoint))
    if json_file is not None:
        from ..traces.io.otlp_json import write_spans

        write_spans(json_file, spans)
        print(f"trace {'added' if args.append else 'written'} to {args.json}")
    provider.shutdown()
    return 0


def _export_report(provider: Any, endpoint: str) -> str:
    """How many spans the collector accepted: counted, not assumed."""
    from ..pipeline.provider import exporting_processor
    from ..util.redact import redact_url

    processor = exporting_processor(provider)
    where = redact_url(endpoint)
    if processor is None:
        return f"spans handed to the OTLP exporter for {where}"
    processor.force_flush(10_000)
    return f"{processor.exported} of {processor.ended} span(s) accepted by {where}"


def _run_remote(provider: Any, memory: Any, json_file: IO[str] | None, endpoint: str | None) -> int:
    """The two-process demo: this process calls the payments service, which
    exports its spans over OTLP to a receiver started here (and on to
    ``endpoint`` when one is set: its own OTEL_* variables name it)."""
    import adk_otel

    from ..testing.receiver import OtlpReceiver
    from ..traces.render import render_tree
    from .demo_remote import DECLINE_OVER_ENV, SERVICE_APP, start_service

    with OtlpReceiver() as receiver:
        service_env = {
            "OTEL_SERVICE_NAME": SERVICE_APP,
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": receiver.http_endpoint,
            "OTEL_BSP_SCHEDULE_DELAY": "20",
            DECLINE_OVER_ENV: "10",  # the mug's 19.9 EUR is declined, as locally
        }
        if endpoint:  # the service exports where the demo would, not to our receiver
            service_env.pop("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            service_env.pop("OTEL_EXPORTER_OTLP_PROTOCOL")
        service = start_service(service_env, stderr=subprocess.DEVNULL)
        try:
            app = adk_otel.instrument(build_remote_app(service.url), tracer_provider=provider)
            error = asyncio.run(run_once(app))
            if not endpoint:
                receiver.wait_for(
                    lambda got: any(s.name == f"invocation {SERVICE_APP}" for s in got),
                    timeout=30,
                )
        finally:
            service.stop()
        provider.force_flush(5_000)
        spans = memory.get_finished_spans()
        print(render_tree([*spans, *receiver.requests], color=sys.stdout.isatty()))
        if error is not None:
            print(f"\nrun failed: {type(error).__name__}: {error}")
        print(f"\none trace across two processes: this one and {SERVICE_APP} ({service.url})")
        if json_file is not None:
            from ..traces.io.otlp_json import write_requests, write_spans

            write_spans(json_file, spans)
            write_requests(json_file, receiver.requests)
            print(f"trace written to {json_file.name}")
    provider.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
