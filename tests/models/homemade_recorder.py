"""A model-call recorder adk-otel has never heard of, written here: a wrapper on google-genai's
client method that records each call as an inference span under the current span, in one of
the vocabularies observability libraries write, and (when given a meter provider) the GenAI
client metrics, as any library might. adk-otel knows nothing of this module: what it does
during the call is all there is to see."""

from __future__ import annotations

import functools
import time
from collections.abc import AsyncIterator
from typing import Any

from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import TracerProvider

SCOPE = "homemade.recorder"
MARKS = ("genai", "older_genai", "openinference", "mlflow", "none")
"""How its span says it is an inference: the GenAI conventions' operation and usage names,
their older usage names, OpenInference's kind and token counts, MLflow's span type; ``none``:
a plain span (what an HTTP client's looks like), which is no inference."""


def _attributes(mark: str, usage: Any) -> dict[str, Any]:
    prompt = getattr(usage, "prompt_token_count", None) or 0
    output = getattr(usage, "candidates_token_count", None) or 0
    if mark == "genai":
        return {
            "gen_ai.operation.name": "chat",
            "gen_ai.usage.input_tokens": prompt,
            "gen_ai.usage.output_tokens": output,
        }
    if mark == "older_genai":
        return {"gen_ai.usage.prompt_tokens": prompt, "gen_ai.usage.completion_tokens": output}
    if mark == "openinference":
        return {
            "openinference.span.kind": "LLM",
            "llm.token_count.prompt": prompt,
            "llm.token_count.completion": output,
        }
    if mark == "mlflow":
        return {"mlflow.spanType": '"CHAT_MODEL"'}
    return {"http.request.method": "POST"}


class HomemadeRecorder:
    """Wraps ``AsyncModels.generate_content`` and ``generate_content_stream`` while on."""

    def __init__(
        self,
        tracer_provider: TracerProvider,
        meter_provider: MeterProvider | None = None,
        *,
        mark: str = "genai",
    ) -> None:
        self._tracer = tracer_provider.get_tracer(SCOPE)
        self._mark = mark
        self._tokens = self._duration = None
        if meter_provider is not None:
            meter = meter_provider.get_meter(SCOPE)
            self._tokens = meter.create_histogram("gen_ai.client.token.usage", unit="{token}")
            self._duration = meter.create_histogram("gen_ai.client.operation.duration", unit="s")
        self._originals: dict[str, Any] = {}

    def on(self) -> None:
        from google.genai.models import AsyncModels

        unary = AsyncModels.generate_content
        stream = AsyncModels.generate_content_stream
        self._originals = {"generate_content": unary, "generate_content_stream": stream}
        recorder = self

        @functools.wraps(unary)
        async def generate_content(models: Any, *args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            with recorder._tracer.start_as_current_span("chat model") as span:
                response = await unary(models, *args, **kwargs)
                recorder._record(span, response.usage_metadata, started)
                return response

        @functools.wraps(stream)
        async def generate_content_stream(models: Any, *args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            span = recorder._tracer.start_span("chat model")
            chunks = await stream(models, *args, **kwargs)

            async def recorded() -> AsyncIterator[Any]:
                usage = None
                try:
                    async for chunk in chunks:
                        usage = chunk.usage_metadata or usage
                        yield chunk
                finally:
                    recorder._record(span, usage, started)
                    span.end()

            return recorded()

        AsyncModels.generate_content = generate_content  # type: ignore[method-assign]
        AsyncModels.generate_content_stream = generate_content_stream  # type: ignore[method-assign]

    def off(self) -> None:
        from google.genai.models import AsyncModels

        for name, original in self._originals.items():
            setattr(AsyncModels, name, original)
        self._originals = {}

    def _record(self, span: Any, usage: Any, started: float) -> None:
        span.set_attributes(_attributes(self._mark, usage))
        if self._tokens is None or self._duration is None:
            return
        dims = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gemini-2.5-flash"}
        self._duration.record(time.perf_counter() - started, dims)
        for kind, value in (
            ("input", getattr(usage, "prompt_token_count", None)),
            ("output", getattr(usage, "candidates_token_count", None)),
        ):
            if value is not None:
                self._tokens.record(value, {**dims, "gen_ai.token.type": kind})
