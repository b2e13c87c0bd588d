"""How each layer's span opens: its parent, name, kind and start attributes.

Every opening hook first unwinds what other contexts ended (``Ledger.unwind``)
and leaves the new span current for the rest of its layer, so the layer's
own callbacks and library spans made inside it nest under it. A span whose
trace is sampled out gets only the attribute that names its kind: nothing
else would be written.
"""

from __future__ import annotations

import weakref
from typing import Any

from opentelemetry import trace

from .. import semconv as sc
from ..ledger.spans import Entry
from ..ledger.telemetry import TelemetryLedger
from ..reading import attributes as attrs
from ..reading.inference_recorders import STAND_DOWN_KEYS
from ..semconv import LIVE_MODEL_REQUEST_EVENT
from ..util import sanitize
from . import keys, nodes
from .runs import Run


def open_agent(
    ledger: TelemetryLedger,
    run: Run | None,
    key: object,
    agent: Any,
    callback_context: Any,
    latest: bool,
) -> Entry:
    """An agent's span, under the innermost open span of its nearest
    ancestor agent, else under the run's."""
    parent: Entry | None = None
    ancestor = getattr(agent, "parent_agent", None)
    while run is not None and ancestor is not None:
        parent = run.innermost_agent(ancestor.name)
        if parent is not None:
            break
        ancestor = getattr(ancestor, "parent_agent", None)
    if parent is None and run is not None:
        # An agent node of a workflow: under the node or nested workflow that runs it.
        node = nodes.enclosing(trace.get_current_span()) if run.nodes is not None else None
        parent = node.entry if node is not None else run.entry
    ledger.unwind()
    if parent is not None and parent.children:
        # A sibling agent (a loop's previous iteration) whose callbacks are done.
        ledger.settle_children(parent)
    parent_name = ancestor.name if ancestor is not None else None
    if ledger.records_all or parent is None or parent.recording:  # ledger.will_record
        opening = attrs.agent_opening(agent, parent_name, latest)
        name, remote = opening.name, opening.remote
        ids = run.ids if run is not None else attrs.context_ids(callback_context)
        attributes = {**opening.attributes, **ids}
        if ancestor is not None and parent is not None and run is not None:
            opened = parent.opened_with
            if ancestor.__class__.__name__ in _PLACING or (
                opened and (sc.ADK_LOOP_ITERATION in opened or sc.ADK_PARALLEL_BRANCH in opened)
            ):
                attributes = _placed(attributes, run, parent, agent, ancestor)
    else:
        name = sanitize.clean(f"invoke_agent {agent.name}")
        remote = attrs.is_remote_agent(agent)
        attributes = attrs.AGENT_KIND_ONLY
    entry = ledger.start(
        key,
        name,
        parent=parent,
        # A remote agent's span is the client side of a call to another service.
        kind=trace.SpanKind.CLIENT if remote else trace.SpanKind.INTERNAL,
        attributes=attributes,
        clean=True,
        # Current while the agent's own code runs (ADK runs this hook in the
        # agent's task and context), so library spans made in its body, such
        # as an A2A or HTTP client's, nest under it.
        current=True,
    )
    return entry


def _placed(
    attributes: attrs.Attributes, run: Run, parent: Entry, agent: Any, ancestor: Any
) -> attrs.Attributes:
    """An agent's loop iteration and parallel branch: its own when its parent
    agent is a ``LoopAgent`` (how many times it ran there, this time
    included) or a ``ParallelAgent`` (its name), else its parent's."""
    opened = parent.opened_with
    place = {k: opened[k] for k in _PLACE if k in opened} if opened else {}
    kind = type(ancestor).__name__ if ancestor is not None else ""
    if kind == "LoopAgent":
        loops = run.iterations
        if loops is None:
            loops = run.iterations = weakref.WeakKeyDictionary()
        counts = loops.setdefault(parent, {})
        iteration = counts[agent.name] = counts.get(agent.name, 0) + 1
        place[sc.ADK_LOOP_ITERATION] = iteration
    elif kind == "ParallelAgent":
        place[sc.ADK_PARALLEL_BRANCH] = sanitize.clean(agent.name)
    return {**attributes, **place} if place else attributes


_PLACE = (sc.ADK_LOOP_ITERATION, sc.ADK_PARALLEL_BRANCH)
_PLACING = frozenset({"LoopAgent", "ParallelAgent"})
"""Parent agents that place their agents (:func:`_placed`)."""


def open_model(
    ledger: TelemetryLedger,
    parent: Entry | None,
    run: Run | None,
    callback_context: Any,
    llm_request: Any,
    latest: bool,
) -> Entry:
    """A model call's span, keyed by the ``EventActions`` object its
    callback context carries (the same object reaches its after hook)."""
    actions = callback_context.actions
    ledger.unwind()
    recording = ledger.records_all or parent is None or parent.recording  # ledger.will_record
    if recording and run is not None:
        opening = attrs.model_opening(callback_context, llm_request, run.streams, latest)
        attributes = {**opening.attributes, **run.ids}
        config = llm_request.config
        if config is not None:
            attrs.request_parameters(attributes, config, latest)
        name = opening.name
    else:  # no run in sight (its ids read here), or sampled out (its layer only)
        attributes = (
            attrs.model_request(callback_context, llm_request, latest)
            if recording
            else attrs.MODEL_KIND_ONLY
        )
        name = sanitize.clean(f"generate_content {attrs.model_name(llm_request)}")
    stand_down: dict[str, object] | None = None
    if (
        sc.ADK_INFERENCE_STOOD_DOWN in attributes
        or sc.ADK_INFERENCE_METRICS_RECORDED_BY in attributes
    ):  # a client instrumentation records the call too (no call made otherwise)
        attributes, stand_down = _stand_down(ledger, parent, attributes)
    entry = ledger.start(
        keys.model(actions),
        name,
        parent=parent,
        kind=trace.SpanKind.CLIENT,
        attributes=attributes,
        anchor=actions,
        clean=True,
        current=True,
        context_values=stand_down,
    )
    return entry


def _stand_down(
    ledger: TelemetryLedger, parent: Entry | None, attributes: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, object] | None]:
    """The model call's attributes and the context value that asks a client instrumentation
    to record nothing of it (``STAND_DOWN_KEYS``), if one is to."""
    stood_down = attributes.get(sc.ADK_INFERENCE_STOOD_DOWN)
    metrics_by = attributes.get(sc.ADK_INFERENCE_METRICS_RECORDED_BY)
    if stood_down is None and metrics_by in STAND_DOWN_KEYS and ledger.drops_under(parent):
        # A dropped trace: Traceloop's instrumentations record its token usage on some paths
        # only (a span that records; any streamed call), so they record none of it, by their
        # own key, and adk-otel records the call's metrics.
        stood_down = metrics_by
        attributes = {
            **{k: v for k, v in attributes.items() if k != sc.ADK_INFERENCE_METRICS_RECORDED_BY},
            sc.ADK_INFERENCE_STOOD_DOWN: stood_down,
        }
    key = STAND_DOWN_KEYS.get(stood_down) if isinstance(stood_down, str) else None
    return attributes, None if key is None else {key: True}


def live_model_request(parent: Entry, llm_request: Any) -> None:
    """A live session calls before_model per user content and never
    after_model: an event on ``parent`` says it happened, without a span
    that could never end honestly."""
    parent.span.add_event(
        LIVE_MODEL_REQUEST_EVENT,
        {sc.GEN_AI_REQUEST_MODEL: sanitize.clean(attrs.model_name(llm_request))},
    )


def open_tool(
    ledger: TelemetryLedger,
    parent: Entry | None,
    tool: Any,
    tool_context: Any,
    run: Run | None = None,
) -> Entry:
    """A tool call's span, keyed by ``(invocation_id, function_call_id)``."""
    invocation_id, call_id = tool_context.invocation_id, tool_context.function_call_id
    ledger.unwind()
    if ledger.records_all or parent is None or parent.recording:  # ledger.will_record
        opening = attrs.tool_opening(tool, tool_context.agent_name)
        attributes = opening.attributes.copy()
        safe_id = run.ids.get(sc.ADK_INVOCATION_ID) if run is not None else None
        if safe_id is not None:  # made safe once for the run
            attributes[sc.ADK_INVOCATION_ID] = safe_id
        attrs.put_tool_ids(attributes, call_id, invocation_id if safe_id is None else None)
        name = opening.name
    else:
        attributes = attrs.TOOL_KIND_ONLY
        name = sanitize.clean(f"execute_tool {tool.name}")
    return ledger.start(
        keys.tool(invocation_id, call_id),
        name,
        parent=parent,
        attributes=attributes,
        clean=True,
        current=True,
    )


def tool_node(ledger: TelemetryLedger, node: nodes.NodeSpan, tool: Any, tool_context: Any) -> Entry:
    """A tool call made inside a workflow node. A tool node's own tool: the
    node's span becomes the tool call's (one span per unit), renamed, with
    the tool's attributes over the node's. Any other: a tool span under it."""
    key = keys.tool(tool_context.invocation_id, tool_context.function_call_id)
    entry = nodes.adopt_tool(node, tool.name, key)
    if entry is None:
        return open_tool(ledger, node.entry, tool, tool_context)
    ledger.unwind()
    if entry.recording:
        entry.span.update_name(sanitize.clean(f"execute_tool {tool.name}"))
    ledger.retype(entry, {**attrs.tool(tool, tool_context), sc.ADK_NODE_KIND: "tool"})
    ledger.attach(entry)
    return entry
