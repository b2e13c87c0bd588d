"""Two runs of one model call each in a fresh process, with a model-client instrumentation
turned on as its users turn it on (before ADK's import, through the global SDK providers that
Phoenix's ``register``, Traceloop and the zero-code agent set), with or without adk-otel.
Prints every finished span and the ``gen_ai.client.token.usage`` input sum, as JSON:
``python client_recorders_child.py BASE_URL SETUP adk-otel|alone`` (SETUP: ``SETUPS``)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from turns import ask_turns, metric_points  # this directory: the child runs as a script

SETUPS = {
    # name: (model class, client instrumentation, streaming)
    "litellm": ("litellm", None, False),
    "litellm+openinference": ("litellm", "openinference-litellm", False),
    "litellm+openinference sse": ("litellm", "openinference-litellm", True),
    "litellm+otel-callback": ("litellm", "litellm-otel-callback", False),
    "litellm+otel-callback request-span": ("litellm", "litellm-otel-callback request-span", False),
    "litellm+openai-v2": ("litellm", "openai-v2", False),
    "anthropic": ("anthropic", None, False),
    "anthropic+sdk": ("anthropic", "anthropic-sdk", False),
    "anthropic+traceloop": ("anthropic", "traceloop-anthropic", False),
    "anthropic+traceloop sse": ("anthropic", "traceloop-anthropic", True),
    "anthropic+traceloop+sdk": ("anthropic", "traceloop-anthropic anthropic-sdk", False),
    "anthropic+traceloop+sdk sse": ("anthropic", "traceloop-anthropic anthropic-sdk", True),
    "anthropic+traceloop metrics-off": ("anthropic", "traceloop-anthropic metrics-off", False),
    "claude+sdk": ("claude", "anthropic-sdk", False),
    "gemini+traceloop": ("gemini", "traceloop-google-generativeai", False),
    "gemini+traceloop sse": ("gemini", "traceloop-google-generativeai", True),
    "gemini+traceloop metrics-off": ("gemini", "traceloop-google-generativeai metrics-off", False),
    "gemini+opentelemetry+traceloop": (
        "gemini",
        "traceloop-google-generativeai opentelemetry-google-genai",
        False,
    ),
    # Traceloop.init() itself: needs traceloop-sdk, which is not in the test extra (it brings
    # some forty instrumentations that the zero-code set-up would load too); it turns on the
    # same anthropic instrumentation as above (benchmarks/README.md, "Traceloop.init()").
    "anthropic+traceloop-init": ("anthropic", "traceloop-init", False),
    "anthropic+traceloop-init+sdk": ("anthropic", "traceloop-init anthropic-sdk", False),
    "litellm+traceloop-init": ("litellm", "traceloop-init", False),
    "gemini+traceloop-init": ("gemini", "traceloop-init", False),
}


def _instrument(client: str, provider: TracerProvider, meters: MeterProvider) -> bool:
    """Turns ``client`` on; False where it cannot be (openai-v2 beside wrapt 2, below)."""
    if "anthropic-sdk" not in client:
        os.environ["ANTHROPIC_OPEN_TELEMETRY"] = "false"
    if "opentelemetry-google-genai" in client:  # as Agent Engine's AdkApp turns it on
        from opentelemetry.instrumentation.google_genai import GoogleGenAiSdkInstrumentor

        GoogleGenAiSdkInstrumentor().instrument(tracer_provider=provider, meter_provider=meters)
    if client.startswith("openinference-litellm"):
        from openinference.instrumentation.litellm import LiteLLMInstrumentor

        LiteLLMInstrumentor().instrument(tracer_provider=provider)
    elif client.startswith("litellm-otel-callback"):
        os.environ["LITELLM_OTEL_INTEGRATION_ENABLE_METRICS"] = "true"
        if client.endswith("request-span"):
            os.environ["USE_OTEL_LITELLM_REQUEST_SPAN"] = "true"
        import litellm

        litellm.callbacks = ["otel"]
    elif client == "openai-v2":
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

        try:
            OpenAIInstrumentor().instrument(tracer_provider=provider, meter_provider=meters)
        except TypeError:  # 2.3b0 passes wrapt 1's `module=`, which wrapt 2 renamed
            return False
    elif client.startswith("traceloop-init"):
        from traceloop.sdk import Traceloop

        Traceloop.init(app_name="shop", exporter=InMemorySpanExporter(), disable_batch=True)
    elif client.startswith("traceloop-"):
        from opentelemetry.instrumentation.anthropic import AnthropicInstrumentor
        from opentelemetry.instrumentation.google_generativeai import (
            GoogleGenerativeAiInstrumentor,
        )

        if "metrics-off" in client:  # read at instrument(), as Traceloop.init() has it read
            os.environ["TRACELOOP_METRICS_ENABLED"] = "false"
        if client.startswith("traceloop-google-generativeai"):
            GoogleGenerativeAiInstrumentor().instrument(
                tracer_provider=provider, meter_provider=meters
            )
            return True
        AnthropicInstrumentor().instrument(tracer_provider=provider, meter_provider=meters)
    return True


def _model(kind: str, base_url: str) -> Any:
    if kind == "gemini":
        from google.adk.models.google_llm import Gemini

        os.environ["GOOGLE_API_KEY"] = "test-key"  # never sent anywhere but loopback
        return Gemini(model="gemini-2.5-flash", base_url=base_url)
    if kind == "litellm":
        from google.adk.models.lite_llm import LiteLlm

        return LiteLlm(model="openai/gpt-4o", api_base=base_url, api_key="test-key")
    os.environ["ANTHROPIC_API_KEY"] = "test-key"  # never sent anywhere but loopback
    os.environ["ANTHROPIC_BASE_URL"] = base_url
    if kind == "anthropic":
        from google.adk.models.anthropic_llm import AnthropicLlm

        return AnthropicLlm(model="claude-sonnet-4")
    # Claude on Vertex AI as both ADK releases build its client, from the environment: the
    # Vertex endpoint and Google credentials whose token endpoint is the local server too.
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    credentials = Path(tempfile.mkdtemp()) / "credentials.json"
    credentials.write_text(
        json.dumps(
            {
                "type": "service_account",
                "project_id": "shop",
                "private_key_id": "test",
                "private_key": key.decode(),
                "client_email": "clerk@shop.iam.gserviceaccount.com",
                "token_uri": f"{base_url}/token",
            }
        )
    )
    os.environ.update(
        GOOGLE_APPLICATION_CREDENTIALS=str(credentials),
        GOOGLE_CLOUD_PROJECT="shop",
        GOOGLE_CLOUD_LOCATION="us-east5",
        ANTHROPIC_VERTEX_BASE_URL=base_url,
    )
    from google.adk.models.anthropic_llm import Claude

    return Claude(model="claude-sonnet-4@20250514")


async def main(base_url: str, setup: str, traced: bool) -> None:
    kind, client, streaming = SETUPS[setup]
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    metrics.set_meter_provider(meters)
    instrumented = _instrument(client or "", provider, meters)

    from google.adk.agents import LlmAgent
    from google.adk.runners import InMemoryRunner

    runner = InMemoryRunner(
        agent=LlmAgent(name="clerk", model=_model(kind, base_url)), app_name="shop"
    )
    if traced:
        import adk_otel

        runner = adk_otel.instrument(runner)
    await ask_turns(runner, turns=2, streaming=streaming)
    if "litellm" in sys.modules:
        # LiteLLM's callbacks run on its logging worker, after the call returns.
        from litellm.litellm_core_utils.logging_worker import GLOBAL_LOGGING_WORKER

        await GLOBAL_LOGGING_WORKER.flush()
    provider.force_flush()
    spans = [
        {
            "name": s.name,
            "scope": s.instrumentation_scope.name if s.instrumentation_scope else "",
            "id": s.context.span_id,
            "parent": s.parent.span_id if s.parent is not None else None,
            "status": s.status.status_code.name,
            "attributes": {
                k: v for k, v in (s.attributes or {}).items() if not isinstance(v, tuple)
            },
        }
        for s in exporter.get_finished_spans()
    ]
    durations = sum(
        point.count for _, point in metric_points(reader, "gen_ai.client.operation.duration")
    )
    token_metric, recordings, own = 0.0, 0, 0
    for scope, point in metric_points(reader, "gen_ai.client.token.usage"):
        labels = point.attributes or {}
        # Traceloop's LiteLLM instrumentation (0.62) names it differently.
        token_type = labels.get("gen_ai.token.type") or labels.get("gen_ai.usage.token_type")
        if token_type == "input":
            token_metric += point.sum
            recordings += point.count
            if scope == "adk_otel":
                own += point.count
    found = {
        "instrumented": instrumented,
        "input_token_metric": token_metric,
        "input_token_recordings": recordings,
        "adk_otel_input_token_recordings": own,
        "duration_recordings": durations,
    }
    print(json.dumps({"spans": spans, **found}))


if __name__ == "__main__":
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3] == "adk-otel"))
