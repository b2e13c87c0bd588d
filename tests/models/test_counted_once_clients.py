"""One model call, one counted inference, beside the client instrumentations ADK's model
classes meet: OpenInference's LiteLLM instrumentor, LiteLLM's own OpenTelemetry callback,
openai-v2, the anthropic SDK's own tracing and Traceloop's anthropic and google-generativeai
instrumentations (with and without their metrics, alone and beside a second recorder of the
same call), for ``LiteLlm``, ``AnthropicLlm``, ``Claude`` (Vertex AI) and ``Gemini`` over HTTP
to local model-API servers.

Each set-up runs in fresh processes (instrumentors patch modules before ADK's import; ADK binds
its tracer at import), once with adk-otel and once with ADK alone on the same global SDK
providers, two model calls each. What backends add up is counted over every span: the spans
carrying a call's input tokens (``gen_ai.usage.input_tokens`` or OpenInference's
``llm.token_count.prompt``), the spans a viewer classifies as an LLM call, and the
``gen_ai.client.token.usage`` input recordings.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import version
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from telemetry.test_viewers import langfuse_type, phoenix_kind  # tests/ is on the path

from adk_otel import semconv as sc
from adk_otel.ledger.inference import NAMED_WITHOUT_TOKEN_USAGE

from .api_servers import api_server

LLM_OPERATIONS = {"generate_content", "chat", "text_completion"}
CHILD = Path(__file__).with_name("client_recorders_child.py")


class Expected(NamedTuple):
    recorded_by: str | None
    """adk-otel's model span is the ADK layer; this recorder's span is the inference."""
    metrics_recorded_by: str | None
    """The recorder that records the model-call metrics (adk-otel then records none)."""
    stood_down: str | None = None
    """A second recorder asked to record nothing of the call (adk-otel says so once)."""


EXPECTED = {
    "litellm+openinference": Expected("openinference-instrumentation-litellm", None),
    "litellm+openinference sse": Expected("openinference-instrumentation-litellm", None),
    # LiteLLM's callback under a current span makes no span of its own: adk-otel's is the
    # inference, the callback records the metrics.
    "litellm+otel-callback": Expected(None, "litellm"),
    "litellm+otel-callback request-span": Expected("litellm", "litellm"),
    # openai-v2 records the duration but no token usage of LiteLLM's calls: adk-otel does.
    "litellm+openai-v2": Expected(
        "opentelemetry-instrumentation-openai-v2", "opentelemetry-instrumentation-openai-v2"
    ),
    "anthropic+traceloop": Expected(
        "opentelemetry-instrumentation-anthropic", "opentelemetry-instrumentation-anthropic"
    ),
    "anthropic+traceloop sse": Expected(
        "opentelemetry-instrumentation-anthropic", "opentelemetry-instrumentation-anthropic"
    ),
    # Traceloop's instrumentation made with TRACELOOP_METRICS_ENABLED=false records no
    # metrics: adk-otel does.
    "anthropic+traceloop metrics-off": Expected("opentelemetry-instrumentation-anthropic", None),
    # Two client recorders below ADK, each with its own span and usage: the SDK's cannot be
    # stopped per call, Traceloop's is (by its own key), and adk-otel records the metrics.
    "anthropic+traceloop+sdk": Expected(
        "anthropic", None, stood_down="opentelemetry-instrumentation-anthropic"
    ),
    "anthropic+traceloop+sdk sse": Expected(
        "anthropic", None, stood_down="opentelemetry-instrumentation-anthropic"
    ),
    "gemini+traceloop": Expected(
        "opentelemetry-instrumentation-google-generativeai",
        "opentelemetry-instrumentation-google-generativeai",
    ),
    "gemini+traceloop sse": Expected(
        "opentelemetry-instrumentation-google-generativeai",
        "opentelemetry-instrumentation-google-generativeai",
    ),
    "gemini+traceloop metrics-off": Expected(
        "opentelemetry-instrumentation-google-generativeai", None
    ),
    # Two wrappers, each with its span: Traceloop's is asked to stand down, by its own key.
    "gemini+opentelemetry+traceloop": Expected(
        "opentelemetry-instrumentation-google-genai",
        "opentelemetry-instrumentation-google-genai",
        stood_down="opentelemetry-instrumentation-google-generativeai",
    ),
    # anthropic 2.x traces every API call by default through the global provider.
    "anthropic+sdk": Expected("anthropic", None),
    "claude+sdk": Expected("anthropic", None),
}


def _child(base_url: str, setup: str, mode: str, *, sampled_out: bool = False) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_OPEN_TELEMETRY"}
    env.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    if sampled_out:  # read by the SDK's TracerProvider() the child makes
        env["OTEL_TRACES_SAMPLER"] = "parentbased_always_off"
    done = subprocess.run(
        [sys.executable, str(CHILD), base_url, setup, mode],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "stderr": done.stderr}


class Counted(NamedTuple):
    usage_spans: int
    """Spans carrying a call's input tokens, under either convention."""
    llm_spans: int
    """Spans Phoenix, Langfuse or the GenAI operation name classify as an LLM call."""
    metric_recordings: int
    """``gen_ai.client.token.usage`` input recordings."""


def _counted(found: dict[str, Any]) -> Counted:
    usage = llm = 0
    for span in found["spans"]:
        attributes = span["attributes"]
        usage += (
            sc.GEN_AI_USAGE_INPUT_TOKENS in attributes or "llm.token_count.prompt" in attributes
        )
        llm += (
            phoenix_kind(attributes) == "LLM"
            or langfuse_type(attributes) == "GENERATION"
            or attributes.get(sc.GEN_AI_OPERATION_NAME) in LLM_OPERATIONS
        )
    return Counted(usage, llm, found["input_token_recordings"])


def _api(setup: str) -> str:
    return {"litellm": "openai", "gemini": "gemini"}.get(setup.split("+")[0], "anthropic")


@pytest.mark.timeout(300)
@pytest.mark.parametrize("setup", list(EXPECTED))
def test_each_model_call_counted_once_beside_the_client_instrumentation(setup) -> None:
    expected = EXPECTED[setup]
    with api_server(_api(setup)) as (url, _), ThreadPoolExecutor(2) as pool:  # two at once
        traced, alone = pool.map(lambda mode: _child(url, setup, mode), ("adk-otel", "alone"))

    if not traced["instrumented"]:
        # openai-v2 2.3b0 cannot wrap under wrapt 2 and 2.4b0 cannot import beside
        # opentelemetry-util-genai 1.x: with the newest packages it records nothing, and
        # adk-otel's span is the inference.
        assert setup == "litellm+openai-v2"
        assert int(version("wrapt").split(".")[0]) >= 2
        expected = Expected(None, None)
    counted = _counted(traced)
    calls = 2
    assert counted == Counted(usage_spans=calls, llm_spans=calls, metric_recordings=calls), (
        f"adk-otel: {counted}; ADK alone: {_counted(alone)}"
    )
    assert traced["duration_recordings"] == calls
    # Said once where a recorder was asked to stand down, never otherwise.
    assert traced["stderr"].count("adk-otel asks") == (expected.stood_down is not None)
    # The metrics recorded once, by whichever side records them.
    own = traced["adk_otel_input_token_recordings"]
    usage_elsewhere = (
        expected.metrics_recorded_by is not None
        and expected.metrics_recorded_by not in NAMED_WITHOUT_TOKEN_USAGE
    )
    assert own == (0 if usage_elsewhere else calls)
    # Never more than ADK alone counts on the same providers (which often counts twice).
    assert all(mine <= theirs for mine, theirs in zip(counted, _counted(alone), strict=True))

    models = [s for s in traced["spans"] if s["attributes"].get(sc.ADK_SPAN_KIND) == "model"]
    assert len(models) == calls
    for span in models:
        attributes = span["attributes"]
        assert span["status"] == "OK"
        assert attributes.get(sc.ADK_INFERENCE_RECORDED_BY) == expected.recorded_by
        assert attributes.get(sc.ADK_INFERENCE_METRICS_RECORDED_BY) == expected.metrics_recorded_by
        assert attributes.get(sc.ADK_INFERENCE_STOOD_DOWN) == expected.stood_down
        if expected.recorded_by is not None:
            # The ADK layer around the client's inference span, with the call's usage kept.
            assert span["name"].startswith("call_llm ")
            assert attributes[sc.OPENINFERENCE_SPAN_KIND] == sc.OI_CHAIN
            assert sc.GEN_AI_OPERATION_NAME not in attributes
            assert attributes[sc.ADK_USAGE_INPUT_TOKENS] > 0
            children = [s for s in traced["spans"] if s["parent"] == span["id"]]
            assert children, "the client's inference span is the model span's child"
        else:
            assert span["name"].startswith("generate_content ")
            assert attributes[sc.GEN_AI_USAGE_INPUT_TOKENS] > 0


@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    "setup",
    [
        "anthropic+traceloop",
        "anthropic+traceloop sse",
        "anthropic+traceloop+sdk",
        "gemini+traceloop",
    ],
)
def test_a_dropped_trace_still_counts_each_call_once_in_the_metrics(setup) -> None:
    """The sampler drops the trace, not the metrics. Traceloop's instrumentations record the
    token usage on some paths only (its anthropic one for streamed calls, not plain ones), so
    under a dropped trace they are asked to record nothing and adk-otel records the metrics."""
    with api_server(_api(setup)) as (url, _), ThreadPoolExecutor(2) as pool:
        traced, alone = pool.map(
            lambda mode: _child(url, setup, mode, sampled_out=True), ("adk-otel", "alone")
        )
    calls = 2
    assert traced["spans"] == [] and alone["spans"] == []
    assert traced["input_token_recordings"] == calls
    assert traced["adk_otel_input_token_recordings"] == calls
    assert traced["duration_recordings"] == calls
    assert traced["input_token_metric"] <= alone["input_token_metric"]
