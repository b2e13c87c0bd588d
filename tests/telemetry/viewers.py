"""What three LLM-observability viewers make of OTLP spans, by their own readers' rules.

Each function encodes one viewer's rules as read from its source, so a test can check
adk-otel's real spans against them without the viewer (a real Phoenix and a real MLflow
were checked by hand the same way: ``docs/collector.md``):

* **Phoenix** (arize-phoenix 20.26.1): the span kind is ``openinference.span.kind``
  when the span has one, else the one it infers from ``gen_ai.*``
  (``phoenix/trace/otel.py`` ``decode_otlp_span``, ``phoenix/trace/gen_ai/conversion.py``
  ``_infer_span_kind``); ``gen_ai.usage.*`` becomes ``llm.token_count.*`` where the span
  has none of its own; tokens count on LLM spans only (``db/insertion/span.py``); a
  trace's total (its root's cumulative count) is over every LLM span in it, a
  project's over the LLM spans with no LLM child
  (``server/api/dataloaders/token_counts.py``).
* **Langfuse** (its ingestion code, ``packages/shared/src/server/otel/``
  ``ObservationTypeMapper.ts`` and ``OtelIngestionProcessor.ts``, langfuse/langfuse at
  005da4e, read 2026-11-29): the observation type is the first mapper in priority order
  that maps the span (a value a mapper does not know falls through to the next); usage
  is read from every ``gen_ai.usage.*`` and ``llm.token_count.*`` attribute of every
  observation, whatever its type, and a trace's usage adds up its observations'.
* **MLflow** (3.17.2, ``mlflow/tracing/otel/translation/``): the span type is
  ``mlflow.spanType`` unless UNKNOWN, else the first translator that maps the span
  (OpenInference's kind first, then the GenAI operation name, ...); a span's usage is
  the first translator's token attributes; a trace's usage skips any span whose
  ancestor already has usage (``tracing/utils`` ``_aggregate_from_nodes``).

Only the rules that can apply to the attributes adk-otel and the google-genai client
instrumentations write are encoded (not Vercel AI SDK's, Traceloop's, Spring AI's, ...).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

OI_KIND = "openinference.span.kind"
OPERATION = "gen_ai.operation.name"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OI_PROMPT = "llm.token_count.prompt"

# -- Phoenix (arize-phoenix 20.26.1) ----------------------------------------------------

_PHOENIX_KINDS = {
    "CHAIN",
    "RETRIEVER",
    "RERANKER",
    "LLM",
    "EMBEDDING",
    "TOOL",
    "AGENT",
    "EVALUATOR",
    "GUARDRAIL",
    "DECISION",
}
_PHOENIX_BY_OPERATION = {
    "chat": "LLM",
    "text_completion": "LLM",
    "generate_content": "LLM",
    "embeddings": "EMBEDDING",
    "execute_tool": "TOOL",
    "retrieval": "RETRIEVER",
    "invoke_agent": "AGENT",
    "create_agent": "AGENT",
}


def phoenix_kind(attributes: Mapping[str, Any]) -> str:
    """Phoenix's span kind for an OTLP span."""
    kind = attributes.get(OI_KIND)
    if kind is None:
        kind = _phoenix_inferred_kind(attributes)
    kind = str(kind).upper() if kind else ""
    return kind if kind in _PHOENIX_KINDS else "UNKNOWN"


def _phoenix_inferred_kind(attributes: Mapping[str, Any]) -> str | None:
    operation = attributes.get(OPERATION)
    if operation is not None:
        return _PHOENIX_BY_OPERATION.get(str(operation))
    if attributes.get("gen_ai.tool.call.id") or attributes.get("gen_ai.tool.name"):
        return "TOOL"
    if attributes.get("gen_ai.retrieval.documents") or attributes.get(
        "gen_ai.retrieval.query.text"
    ):
        return "RETRIEVER"
    if attributes.get("gen_ai.embeddings.dimension.count") is not None:
        return "EMBEDDING"
    if any(
        attributes.get(key)
        for key in ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.request.model")
    ):
        return "LLM"
    return None


def phoenix_prompt_tokens(attributes: Mapping[str, Any]) -> int:
    """The prompt tokens Phoenix counts for one span (LLM spans only)."""
    if phoenix_kind(attributes) != "LLM":
        return 0
    return int(attributes.get(OI_PROMPT, attributes.get(INPUT_TOKENS)) or 0)


def phoenix_trace_prompt_tokens(spans: Iterable[ReadableSpan]) -> int:
    """A trace's prompt tokens in Phoenix (its root span's cumulative count)."""
    return sum(phoenix_prompt_tokens(s.attributes or {}) for s in spans)


def phoenix_project_prompt_tokens(spans: Iterable[ReadableSpan]) -> int:
    """A project's prompt tokens in Phoenix: over the LLM spans with no LLM child."""
    spans = list(spans)
    llm = [s for s in spans if phoenix_kind(s.attributes or {}) == "LLM"]
    with_llm_child = {s.parent.span_id for s in llm if s.parent is not None}
    return sum(
        phoenix_prompt_tokens(s.attributes or {})
        for s in llm
        if s.context.span_id not in with_llm_child
    )


# -- Langfuse (ingestion code at langfuse/langfuse 005da4e) -----------------------------

_LANGFUSE_OWN = {
    "span": "SPAN",
    "generation": "GENERATION",
    "event": "EVENT",
    "embedding": "EMBEDDING",
    "agent": "AGENT",
    "tool": "TOOL",
    "chain": "CHAIN",
    "retriever": "RETRIEVER",
    "guardrail": "GUARDRAIL",
    "evaluator": "EVALUATOR",
}
_LANGFUSE_BY_KIND = {
    "CHAIN": "CHAIN",
    "RETRIEVER": "RETRIEVER",
    "LLM": "GENERATION",
    "EMBEDDING": "EMBEDDING",
    "AGENT": "AGENT",
    "TOOL": "TOOL",
    "GUARDRAIL": "GUARDRAIL",
    "EVALUATOR": "EVALUATOR",
}
_LANGFUSE_BY_OPERATION = {
    "chat": "GENERATION",
    "completion": "GENERATION",
    "text_completion": "GENERATION",
    "generate_content": "GENERATION",
    "generate": "GENERATION",
    "embeddings": "EMBEDDING",
    "invoke_agent": "AGENT",
    "create_agent": "AGENT",
    "execute_tool": "TOOL",
}
_LANGFUSE_MODEL_KEYS = (
    "langfuse.observation.model.name",
    "gen_ai.request.model",
    "gen_ai.response.model",
    "llm.model_name",
    "model",
)


def langfuse_type(attributes: Mapping[str, Any]) -> str:
    """Langfuse's observation type for an OTLP span (not from Langfuse's own SDK)."""
    for key, mapping in (
        ("langfuse.observation.type", _LANGFUSE_OWN),
        (OI_KIND, _LANGFUSE_BY_KIND),
        (OPERATION, _LANGFUSE_BY_OPERATION),
    ):
        mapped = mapping.get(str(attributes.get(key)))
        if mapped is not None:
            return mapped
    if attributes.get("gen_ai.tool.name") or attributes.get("gen_ai.tool.call.id"):
        return "TOOL"
    if any(attributes.get(key) for key in _LANGFUSE_MODEL_KEYS):
        return "GENERATION"
    return "SPAN"


_LANGFUSE_INPUT = {"prompt_tokens", "input_tokens", "prompt"}


def langfuse_input_tokens(attributes: Mapping[str, Any]) -> int:
    """The input usage Langfuse reads from one span, whatever its type (of several
    attributes that map to ``input``, the last one written wins)."""
    found = 0
    for key, value in attributes.items():
        for prefix in ("gen_ai.usage.", "llm.token_count."):
            if key.startswith(prefix) and key[len(prefix) :] in _LANGFUSE_INPUT:
                found = int(value)
    return found


def langfuse_trace_input_tokens(spans: Iterable[ReadableSpan]) -> int:
    return sum(langfuse_input_tokens(s.attributes or {}) for s in spans)


# -- MLflow (3.17.2) --------------------------------------------------------------------

_MLFLOW_BY_KIND = {
    "TOOL": "TOOL",
    "CHAIN": "CHAIN",
    "LLM": "LLM",
    "RETRIEVER": "RETRIEVER",
    "EMBEDDING": "EMBEDDING",
    "AGENT": "AGENT",
    "RERANKER": "RERANKER",
    "UNKNOWN": "UNKNOWN",
    "GUARDRAIL": "GUARDRAIL",
    "EVALUATOR": "EVALUATOR",
}
_MLFLOW_BY_OPERATION = {
    "chat": "CHAT_MODEL",
    "create_agent": "AGENT",
    "embeddings": "EMBEDDING",
    "execute_tool": "TOOL",
    "generate_content": "LLM",
    "invoke_agent": "AGENT",
    "text_completion": "LLM",
    "response": "LLM",
}
_MLFLOW_BY_LANGFUSE = {
    "generation": "LLM",
    "embedding": "EMBEDDING",
    "tool": "TOOL",
    "retriever": "RETRIEVER",
    "agent": "AGENT",
    "chain": "CHAIN",
    "evaluator": "EVALUATOR",
    "guardrail": "GUARDRAIL",
    "span": "UNKNOWN",
}


def mlflow_type(attributes: Mapping[str, Any]) -> str:
    """MLflow's span type for an OTLP span."""
    own = attributes.get("mlflow.spanType")
    if own is not None:
        own = json.loads(own) if isinstance(own, str) and own.startswith('"') else own
        if own != "UNKNOWN":
            return str(own)
    for key, mapping in (
        (OI_KIND, _MLFLOW_BY_KIND),
        (OPERATION, _MLFLOW_BY_OPERATION),
        ("langfuse.observation.type", _MLFLOW_BY_LANGFUSE),
    ):
        mapped = mapping.get(str(attributes.get(key)))
        if mapped is not None:
            return mapped
    return "UNKNOWN"


def mlflow_input_tokens(attributes: Mapping[str, Any]) -> int | None:
    """The input tokens MLflow records for one span: the first convention that has any
    token count (OpenInference's, then the GenAI conventions'), or None."""
    conventions = (
        (OI_PROMPT, "llm.token_count.completion", "llm.token_count.total"),
        (INPUT_TOKENS, "gen_ai.usage.output_tokens"),
    )
    for keys in conventions:
        if any(attributes.get(key) is not None for key in keys):
            return int(attributes.get(keys[0]) or 0)
    return None


def mlflow_trace_input_tokens(spans: Iterable[ReadableSpan]) -> int:
    """A trace's input tokens in MLflow: a span's usage counts unless an ancestor's does."""
    spans = list(spans)
    by_id = {s.context.span_id: s for s in spans}

    def counted_above(span: ReadableSpan) -> bool:
        parent = span.parent
        while parent is not None and parent.span_id in by_id:
            above = by_id[parent.span_id]
            if mlflow_input_tokens(above.attributes or {}) is not None:
                return True
            parent = above.parent
        return False

    return sum(mlflow_input_tokens(s.attributes or {}) or 0 for s in spans if not counted_above(s))
