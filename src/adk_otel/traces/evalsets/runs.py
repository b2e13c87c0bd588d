"""The runs in a set of spans: each top-level invocation with its own tool calls.

A run is one invocation span (one ``Runner.run_async``) and the spans that
carry its ADK invocation id: its agents and its tool calls, in start order.
An ``AgentTool``'s inner run, or a remote agent's run continuing the
caller's trace, sits under a tool span of another run: it is that tool's
work, not a turn of its own, as ADK's evaluation sees it (its events never
reach the caller's session), so it is left out. Model-call spans are not
needed (the invocation span holds the turn's user message and final
response), which is what :func:`wanted` keeps memory to.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ... import semconv as sc
from ..io.model import Forest, SpanRecord, is_invocation, sort_key

_KINDS = frozenset({sc.SpanKind.INVOCATION, sc.SpanKind.AGENT, sc.SpanKind.TOOL, sc.SpanKind.NODE})


def wanted(record: SpanRecord) -> bool:
    """The spans a run is built from: invocations, agents, tools and workflow nodes."""
    return record.adk_kind in _KINDS or is_invocation(record)


@dataclass(frozen=True)
class Run:
    """One run: its invocation span, then its agent, node and tool spans in start order."""

    invocation: SpanRecord
    spans: tuple[SpanRecord, ...]

    @property
    def tools(self) -> list[SpanRecord]:
        return [r for r in self.spans if r.adk_kind == sc.SpanKind.TOOL]

    @property
    def agents(self) -> set[str]:
        return {
            str(r.attributes[sc.GEN_AI_AGENT_NAME])
            for r in self.spans
            if r.adk_kind == sc.SpanKind.AGENT and sc.GEN_AI_AGENT_NAME in r.attributes
        }

    def attribute(self, key: str) -> str | None:
        value = self.invocation.attributes.get(key)
        return value if isinstance(value, str) and value else None

    @property
    def app(self) -> str | None:
        return self.attribute(sc.ADK_APP_NAME)

    @property
    def session(self) -> str | None:
        return self.attribute(sc.GEN_AI_CONVERSATION_ID)

    @property
    def user(self) -> str | None:
        return self.attribute(sc.USER_ID) or self.attribute(sc.ADK_USER_ID)

    @property
    def invocation_id(self) -> str | None:
        return self.attribute(sc.ADK_INVOCATION_ID)

    @property
    def outcome(self) -> str | None:
        return self.invocation.outcome

    @property
    def trace_id(self) -> str:
        return self.invocation.trace_id

    @property
    def start_ns(self) -> int:
        return self.invocation.start_ns

    @property
    def categories(self) -> set[str]:
        """The failure categories in the run (its roll-up and each span's own)."""
        found = self.invocation.attributes.get(sc.ADK_ERROR_CATEGORIES) or ()
        names = {str(c) for c in found} if isinstance(found, tuple | list) else {str(found)}
        for record in (self.invocation, *self.spans):
            category = record.attributes.get(sc.ADK_ERROR_CATEGORY)
            if category is not None:
                names.add(str(category))
        return names

    @property
    def failure(self) -> SpanRecord | None:
        """The span whose error ended the run: the first failed tool, else the
        invocation itself when it failed."""
        for record in self.tools:
            if record.outcome == sc.Outcome.ERROR:
                return record
        return self.invocation if self.outcome == sc.Outcome.ERROR else None


def collect(records: Iterable[SpanRecord]) -> list[Run]:
    """The top-level runs among ``records``, by start time."""
    forest = Forest(records)
    run_of: dict[int, SpanRecord | None] = {}
    top: list[SpanRecord] = []
    for node, _ in forest.walk():  # parents before children
        above = run_of.get(id(node.parent)) if node.parent is not None else None
        if is_invocation(node.record):
            if above is None:
                top.append(node.record)
            run_of[id(node)] = node.record
        else:
            run_of[id(node)] = above
    spans: dict[tuple[str, str], list[SpanRecord]] = {}
    for record in forest.records:
        invocation_id = record.attributes.get(sc.ADK_INVOCATION_ID)
        if not is_invocation(record) and isinstance(invocation_id, str):
            spans.setdefault((record.trace_id, invocation_id), []).append(record)
    runs = []
    for invocation in top:
        invocation_id = invocation.attributes.get(sc.ADK_INVOCATION_ID)
        own = spans.get((invocation.trace_id, str(invocation_id)), [])
        runs.append(Run(invocation, tuple(sorted(own, key=sort_key))))
    return sorted(runs, key=lambda run: sort_key(run.invocation))
