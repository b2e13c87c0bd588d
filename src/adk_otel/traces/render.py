"""Span forests as text: a readable tree for people, a normalised one for snapshots.

The readable tree is what every failed assertion prints, so a red CI run
shows the whole trace at a glance::

    invocation shop  ERROR error 12.3ms
    └─ invoke_agent root  ERROR error 11.9ms  [ValueError]
       ├─ generate_content scripted-model  OK ok 0.4ms
       └─ execute_tool lookup  ERROR error 0.2ms  [ValueError: no such sku]

An error message is shown once, on the deepest span carrying it; ancestors
that merely propagated it show the type only. The normalised form drops what
changes between runs (ids, timestamps, durations), keeps an allow-list of
attributes and masks the per-run ids it keeps, so it can be committed as a
golden file.

Both stay linear in the size of the trace, however it nests: below depth
:data:`MAX_DRAWN_DEPTH` the indentation stops growing and each line says its
depth instead (``└─ [500] name``), so a chain of 50,000 spans prints 50,000
short lines, not gigabytes of indentation.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable
from typing import Any

from .. import semconv as sc
from .io.model import Forest, SpanNode, SpanRecord

NOT_ENDED = "!! NOT ENDED"
MASK = "<masked>"

SNAPSHOT_ATTRIBUTES: frozenset[str] = frozenset(
    {
        sc.ADK_SPAN_KIND,
        sc.ADK_OUTCOME,
        sc.ADK_CLOSE_REASON,
        sc.ADK_APP_NAME,
        sc.ADK_USER_ID,
        sc.ADK_AGENT_PARENT,
        sc.ADK_AGENT_TYPE,
        sc.ADK_TOOL_LONG_RUNNING,
        sc.ADK_MODEL_STREAMING,
        sc.ADK_MODEL_CHUNKS,
        sc.ADK_LIVE,
        sc.ADK_MODEL_CALL_COUNT,
        sc.ADK_TOOL_CALL_COUNT,
        sc.GEN_AI_OPERATION_NAME,
        sc.GEN_AI_PROVIDER_NAME,
        sc.GEN_AI_AGENT_NAME,
        sc.GEN_AI_AGENT_DESCRIPTION,
        sc.GEN_AI_REQUEST_MODEL,
        sc.GEN_AI_RESPONSE_MODEL,
        sc.GEN_AI_RESPONSE_FINISH_REASONS,
        sc.GEN_AI_USAGE_INPUT_TOKENS,
        sc.GEN_AI_USAGE_OUTPUT_TOKENS,
        sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
        sc.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS,
        sc.GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS,
        sc.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS,
        *sc.ROLLUP_USAGE.values(),
        sc.GEN_AI_TOOL_NAME,
        sc.GEN_AI_TOOL_TYPE,
        sc.GEN_AI_TOOL_DESCRIPTION,
        sc.ERROR_TYPE,
    }
)
"""Attributes a snapshot keeps with their value: stable from run to run. Captured
content (``gen_ai.input.messages``...) is left out; add it per snapshot if wanted."""

MASKED_ATTRIBUTES: frozenset[str] = frozenset(
    {sc.ADK_INVOCATION_ID, sc.GEN_AI_CONVERSATION_ID, sc.GEN_AI_TOOL_CALL_ID}
)
"""Attributes a snapshot keeps as ``<masked>``: present, but new every run."""

MAX_DRAWN_DEPTH = 48
"""Deeper than this, a line's indentation stops growing and names its depth."""

_COLOURS = {"OK": "32", "ERROR": "31", "UNSET": "33", "NOT_ENDED": "1;31", "dim": "2"}


def _paint(text: str, colour: str, enabled: bool) -> str:
    code = _COLOURS.get(colour)
    return f"\x1b[{code}m{text}\x1b[0m" if enabled and code else text


def _forest(spans: Forest | Iterable[Any]) -> Forest:
    return spans if isinstance(spans, Forest) else Forest(spans)


def status_text(record: SpanRecord) -> str:
    """``OK ok`` / ``ERROR error`` / ``UNSET cancelled``: status, then adk outcome."""
    return " ".join(part for part in (record.status_code, record.outcome) if part)


def error_text(record: SpanRecord, *, with_message: bool = True) -> str | None:
    """``ValueError: no such sku`` (or the type alone), None when no error."""
    kind = record.error_type
    message = record.status_description if record.status_code == "ERROR" else None
    if not kind and not message:
        return None
    if not with_message or not message:
        return kind
    if not kind or message.startswith(f"{kind.rsplit('.', 1)[-1]}:"):
        return message
    return f"{kind}: {message}"


def describe(record: SpanRecord) -> str:
    """One line: name, status, outcome, duration, error (used in messages)."""
    return _line(record, show_message=True, colour=False, orphan=False)


def _line(record: SpanRecord, *, show_message: bool, colour: bool, orphan: bool) -> str:
    parts = [record.name]
    status = status_text(record)
    if record.ended:
        timing = f"{record.duration_ms:.1f}ms"
        parts.append(" ".join(p for p in (_paint(status, record.status_code, colour), timing) if p))
    else:
        parts.append(" ".join(p for p in (status, _paint(NOT_ENDED, "NOT_ENDED", colour)) if p))
    error = error_text(record, with_message=show_message)
    if error:
        parts.append(_paint(f"[{error}]", "ERROR", colour))
    if orphan:
        parts.append(_paint(f"(orphan: parent {record.parent_id} not in the data)", "dim", colour))
    return "  ".join(parts)


def _messages_below(forest: Forest) -> set[tuple[int, str]]:
    """``(id(node), message)`` for every node with a descendant whose status
    message is ``message`` (a message is shown on the deepest span with it
    only), for the whole forest in one pass (each ancestor is marked once per message, so a deep
    chain costs its length, not its length squared)."""
    below: set[tuple[int, str]] = set()
    for root in forest.roots:
        for node, _ in root.walk():
            message = node.record.status_description
            parent = node.parent if message else None
            while parent is not None and (id(parent), message) not in below:
                below.add((id(parent), message))  # type: ignore[arg-type]
                parent = parent.parent
    return below


def _draw(forest: Forest, label: Any, details: Any = None, trace_label: Any = None) -> str:
    lines: list[str] = []
    multiple = len(forest.trace_ids()) > 1
    current_trace: str | None = None
    for index, root in enumerate(forest.roots):
        trace_id = root.record.trace_id
        if multiple and trace_id != current_trace:
            current_trace = trace_id
            if lines:
                lines.append("")
            lines.append(trace_label(trace_id) if trace_label else f"trace {trace_id}")
        elif index and not multiple:
            lines.append("")
        _draw_node(root, "", "", label, details, lines)
    return "\n".join(lines)


def _draw_node(
    node: SpanNode, first: str, rest: str, label: Any, details: Any, lines: list[str]
) -> None:
    """``node`` and its descendants, drawn depth first without recursion (a
    trace may nest deeper than Python's recursion limit)."""
    stack: list[tuple[SpanNode, str, str, int]] = [(node, first, rest, 0)]
    while stack:
        current, head, indent, depth = stack.pop()
        lines.append(head + label(current))
        if details is not None:
            bar = "│  " if current.children else "   "
            lines.extend(f"{indent}{bar}  {detail}" for detail in details(current))
        last_index = len(current.children) - 1
        deep = depth + 1 > MAX_DRAWN_DEPTH
        for i in range(last_index, -1, -1):
            last = i == last_index
            branch = "└─ " if last else "├─ "
            if deep:  # the indentation stops growing; the line names its depth
                child_head, child_indent = f"{indent}{branch}[{depth + 1}] ", indent
            else:
                child_head, child_indent = indent + branch, indent + ("   " if last else "│  ")
            stack.append((current.children[i], child_head, child_indent, depth + 1))


def render_tree(
    spans: Forest | Iterable[Any], *, color: bool = False, evaluations: Iterable[Any] = ()
) -> str:
    """The readable tree (see the module docstring); ``color`` adds ANSI colours.
    ``evaluations`` (``traces.evaluations.EvaluationResult``) are drawn under
    the span each judges, one ``score ...`` line each."""
    forest = _forest(spans)
    if not len(forest):
        return "(no spans)"
    below = _messages_below(forest)

    def shows_message(node: SpanNode) -> bool:
        message = node.record.status_description
        return not message or (id(node), message) not in below

    scores: dict[tuple[str, str], list[Any]] = {}
    for result in evaluations:
        if result.trace_id and result.span_id:
            scores.setdefault((result.trace_id, result.span_id), []).append(result)

    def score_lines(node: SpanNode) -> list[str]:
        return [r.line() for r in scores.get(node.record.key, ())]

    return _draw(
        forest,
        lambda node: _line(
            node.record, show_message=shows_message(node), colour=color, orphan=node.orphan
        ),
        score_lines if scores else None,
    )


def _value(value: Any) -> str:
    if isinstance(value, tuple):
        value = list(value)
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=repr)


def render_normalized(
    spans: Forest | Iterable[Any],
    *,
    attributes: Collection[str] = SNAPSHOT_ATTRIBUTES,
    masked: Collection[str] = MASKED_ATTRIBUTES,
) -> str:
    """The snapshot form: no ids, times or durations; allow-listed attributes
    (``masked`` ones as ``<masked>``) and events under each span."""
    forest = _forest(spans)
    if not len(forest):
        return "(no spans)\n"
    trace_numbers = {trace_id: n for n, trace_id in enumerate(forest.trace_ids(), start=1)}

    def label(node: SpanNode) -> str:
        record = node.record
        parts = [record.name, f"{record.kind} {status_text(record)}"]
        if not record.ended:
            parts.append(NOT_ENDED)
        error = error_text(record)
        if error:
            parts.append(f"[{error}]")
        if node.orphan:
            parts.append("(orphan)")
        return "  ".join(parts)

    def details(node: SpanNode) -> list[str]:
        record = node.record
        shown = [
            f"{key} = {MASK if key in masked else _value(value)}"
            for key, value in sorted(record.attributes.items())
            if key in attributes or key in masked
        ]
        for event in record.events:
            if event.name == "exception":
                kind = event.attributes.get("exception.type", "?")
                message = event.attributes.get("exception.message", "")
                shown.append(f"event exception {kind}: {message}")
            else:
                shown.append(f"event {event.name}")
        return shown

    return (
        _draw(forest, label, details, lambda trace_id: f"trace #{trace_numbers[trace_id]}") + "\n"
    )
