"""What one open span keeps beside its OpenTelemetry span: its start
attributes, the agent and invocation spans its numbers roll up to, its counts,
token totals, streamed-chunk timings and the content for its end event.

Kept per span as it starts (``Entry.facts``; this module imports nothing of the
ledger's, so the entry can name the type), so a model or tool call adds to
its callers' totals without walking the tree (telemetry.py writes them as each
span ends, metrics.py records them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from opentelemetry.util.types import AttributeValue

from .. import semconv as sc
from .inference import Seen

AGENT, MODEL, TOOL, INVOCATION = (
    sc.SpanKind.AGENT.value,
    sc.SpanKind.MODEL.value,
    sc.SpanKind.TOOL.value,
    sc.SpanKind.INVOCATION.value,
)
ROLLUP_KINDS = (AGENT, INVOCATION)
# Span attributes each metric keeps as its own dimensions.
_DIMENSIONS = {
    MODEL: (
        sc.GEN_AI_OPERATION_NAME,
        sc.GEN_AI_PROVIDER_NAME,
        sc.GEN_AI_REQUEST_MODEL,
        sc.SERVER_ADDRESS,
        sc.SERVER_PORT,
    ),
    AGENT: (sc.GEN_AI_AGENT_NAME, sc.GEN_AI_REQUEST_MODEL),
    TOOL: (sc.GEN_AI_TOOL_NAME, sc.GEN_AI_TOOL_TYPE, sc.GEN_AI_AGENT_NAME),
    INVOCATION: (sc.ADK_APP_NAME,),
}


def dimensions(facts: Facts, keys: tuple[str, ...] | None = None) -> dict[str, AttributeValue]:
    """A span's metric (or event) attributes, read from its start attributes."""
    start = facts.attributes
    keys = _DIMENSIONS.get(facts.kind, ()) if keys is None else keys
    dims = {k: start[k] for k in keys if k in start}
    if facts.response_model is not None and facts.kind == MODEL:
        dims[sc.GEN_AI_RESPONSE_MODEL] = facts.response_model
    return dims


@dataclass(slots=True, eq=False)
class Facts:
    kind: str
    above: tuple[Facts, ...]
    """The agent and invocation spans this span's numbers roll up to, nearest
    first, found once as it starts (see telemetry.rollups_over)."""
    attributes: Mapping[str, AttributeValue]
    """The span's start attributes (the plugin's own dict, never changed)."""
    started: int = 0
    response_model: AttributeValue | None = None
    model_calls: int = 0
    tool_calls: int = 0
    tokens: dict[str, int] | None = None
    event: dict[str, AttributeValue] | None = None
    event_name: str = ""
    response: Mapping[str, AttributeValue] | None = None
    """A model call's final response attributes (for its details event)."""
    chunk_at: int = 0
    """``perf_counter_ns`` of the latest streamed chunk (0: none yet)."""
    first_chunk: float | None = None
    """Seconds from the request to the first streamed chunk."""
    chunk_gaps: list[float] | None = None
    """Seconds between consecutive streamed chunks (kept only for metrics)."""
    errors: int = 0
    """ERROR spans below this one (agent and invocation spans)."""
    categories: set[str] | None = None
    """Their distinct ``adk.error.category`` values."""
    seen: Seen | None = None
    """A model call: what other libraries recorded of it while it ran (inference.py)."""
