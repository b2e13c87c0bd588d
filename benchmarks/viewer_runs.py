"""Real ADK runs traced by adk-otel, sent over OTLP/HTTP to a viewer on loopback.

What a viewer (Phoenix, MLflow) makes of a workflow's node spans and of a model
call that a client instrumentation records too is checked by sending it these
runs and reading back what it shows (``docs/collector.md`` records the result):

* ``workflow``: a ``Workflow`` with a function node, a fan-out to two agent
  nodes joined by a ``JoinNode``, a nested workflow, and an agent node that
  calls a tool (scripted models: no network);
* ``gemini``: ADK's real ``Gemini`` class over HTTP to a local Gemini-API
  server (the suite's, ``tests/models/api_servers.py``), two runs of one model
  call each (40 prompt tokens per call), with OpenTelemetry's or OpenInference's
  google-genai instrumentation, or both, on the same provider (``--adk-alone``: ADK's
  own telemetry on that provider instead of adk-otel, for comparison).

The spans go to ``--endpoint`` (``{endpoint}/v1/traces``) with the resource
attribute ``openinference.project.name`` set to ``--project`` (Phoenix's
project) and ``--header`` values as OTLP headers (MLflow's experiment).

Usage (the repository's virtualenv; the viewer runs in its own)::

    python benchmarks/viewer_runs.py workflow --endpoint http://127.0.0.1:6006 --project flow
    python benchmarks/viewer_runs.py gemini --client opentelemetry --endpoint ... --project genai
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CLIENTS = ("opentelemetry", "openinference")


def providers(endpoint: str, project: str, headers: dict[str, str]) -> Any:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    resource = Resource.create(
        {"service.name": "adk-otel-viewer-check", "openinference.project.name": project}
    )
    tracer_provider = TracerProvider(resource=resource)
    exporter = OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces", headers=headers)
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    return tracer_provider, MeterProvider(metric_readers=[InMemoryMetricReader()])


async def drive(runner: Any, text: str) -> None:
    from google.genai import types

    session = await runner.session_service.create_session(app_name="shop", user_id="viewer")
    async for _ in runner.run_async(
        user_id="viewer", session_id=session.id, new_message=types.UserContent(text)
    ):
        pass


async def workflow_run(tracer_provider: Any, meter_provider: Any) -> None:
    from google.adk.agents import LlmAgent
    from google.adk.runners import InMemoryRunner
    from google.adk.workflow import JoinNode, Workflow

    import adk_otel
    from adk_otel.testing.model import ScriptedModel, call, reply

    def prepare() -> dict[str, Any]:
        """Function node: the order to look at."""
        return {"sku": "A1"}

    def lookup(sku: str) -> dict[str, Any]:
        """Stock level for a SKU."""
        return {"sku": sku, "stock": 3}

    def agent(name: str, *script: Any, **options: Any) -> LlmAgent:
        steps = list(script) or [reply(f"{name} done")]
        return LlmAgent(name=name, model=ScriptedModel(script=steps), **options)

    def outline() -> str:
        """Function node of the nested workflow."""
        return "outline"

    inner = Workflow(name="inner", edges=[("START", outline, agent("drafter"))])
    clerk = agent("clerk", call("lookup", {"sku": "A1"}), reply("3 left"), tools=[lookup])
    fan_out = (agent("north"), agent("south"))
    flow = Workflow(
        name="flow", edges=[("START", prepare, fan_out, JoinNode(name="merge"), inner, clerk)]
    )
    runner = adk_otel.instrument(
        InMemoryRunner(node=flow, app_name="shop"),
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
    )
    await drive(runner, "stock of A1?")


async def gemini_runs(
    tracer_provider: Any, meter_provider: Any, clients: list[str], *, adk_alone: bool = False
) -> None:
    from google.adk.agents import LlmAgent
    from google.adk.models.google_llm import Gemini
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    import adk_otel

    sys.path.insert(0, str(ROOT / "tests"))
    from models.api_servers import api_server

    instrumentors: list[Any] = []
    if "opentelemetry" in clients:
        from opentelemetry.instrumentation.google_genai import GoogleGenAiSdkInstrumentor

        instrumentors.append(GoogleGenAiSdkInstrumentor())
    if "openinference" in clients:
        from openinference.instrumentation.google_genai import GoogleGenAIInstrumentor

        instrumentors.append(GoogleGenAIInstrumentor())
    for instrumentor in instrumentors:
        instrumentor.instrument(tracer_provider=tracer_provider, meter_provider=meter_provider)
    os.environ["GOOGLE_API_KEY"] = "test-key"  # sent to the loopback server only
    for name in ("GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_ENTERPRISE"):
        os.environ.pop(name, None)
    try:
        with api_server("gemini") as (url, _requests):
            model = Gemini(
                model="gemini-2.5-flash",
                base_url=url,
                retry_options=types.HttpRetryOptions(attempts=1),
            )
            runner = InMemoryRunner(agent=LlmAgent(name="clerk", model=model), app_name="shop")
            if not adk_alone:
                runner = adk_otel.instrument(
                    runner, tracer_provider=tracer_provider, meter_provider=meter_provider
                )
            for turn in range(2):
                await drive(runner, f"stock of A{turn}?")
    finally:
        for instrumentor in reversed(instrumentors):
            instrumentor.uninstrument()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", choices=["workflow", "gemini"])
    parser.add_argument("--endpoint", required=True, help="the viewer's OTLP/HTTP base URL")
    parser.add_argument("--project", default="adk-otel", help="Phoenix's project name")
    parser.add_argument("--client", action="append", choices=CLIENTS, default=[])
    parser.add_argument("--header", action="append", default=[], help="an OTLP header k=v")
    parser.add_argument("--capture", action="store_true", help="capture message content")
    parser.add_argument(
        "--adk-alone", action="store_true", help="gemini: ADK's own telemetry, no adk-otel"
    )
    args = parser.parse_args(argv)
    if args.capture:
        os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY"
    headers = dict(item.split("=", 1) for item in args.header)
    tracer_provider, meter_provider = providers(args.endpoint, args.project, headers)
    if args.adk_alone:
        from opentelemetry import metrics, trace

        # ADK takes its tracer from the global provider when its telemetry is imported.
        trace.set_tracer_provider(tracer_provider)
        metrics.set_meter_provider(meter_provider)
    if args.run == "workflow":
        asyncio.run(workflow_run(tracer_provider, meter_provider))
    else:
        asyncio.run(
            gemini_runs(tracer_provider, meter_provider, args.client, adk_alone=args.adk_alone)
        )
    tracer_provider.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
