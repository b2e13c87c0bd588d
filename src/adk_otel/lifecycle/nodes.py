"""Workflow node spans: one span per run (and per attempt) of an ADK 2 graph node.

ADK gives plugins no hook for a node: function, join, nested workflow, dynamic
and parallel-worker nodes run between the plugin's hooks, and only ADK's own
node tracing (``google.adk.telemetry.node_tracing``) sees each one start and
end, retry, fail, or fail "as data" (a workflow storing a child's exception
instead of raising it). That tracing asks the global tracer provider for the
tracer of scope ``gcp.vertex.agent`` and opens ``invoke_workflow`` and
``invoke_node`` spans on it. adk-otel's tracer provider (``pipeline/provider.py``)
hands ADK a :class:`NodeTracer` for that scope (registered as that scope's
tracer by ``node_routing.py``: the pipeline never imports this module), and so
does the tracer ADK already holds when a provider was set before ADK's import
(``pipeline/held_tracer.py``). It turns those calls into one lifecycle with the
plugin's spans:

* ADK's run span (``invoke_workflow <root>`` or the legacy ``invocation``)
  becomes a :class:`RunRoot`: a non-recording span that passes the caller's
  context through, as ADK's spans always did under adk-otel. The plugin's
  ``before_run`` finds it current and *claims* it (:func:`claim_root`), so
  the run's nodes open under the invocation span. A run nobody claims (a
  Runner left un-instrumented) keeps ADK's own spans, its root included.
* ``invoke_node`` and nested ``invoke_workflow`` become :class:`NodeSpan`:
  an entry in the plugin's span ledger under the node or workflow that ran
  it, with ADK holding it current while the node's own code runs (so spans
  the application opens there are its children) and ending it. Its outcome is
  decided here: ``ok`` on a clean end, ``error`` with the recorded exception
  and its failure category, ``cancelled`` when the node's task was cancelled.
  A run that ends first sweeps it like any other open span (exactly once).
* Every other span ADK asks for (its ``invoke_agent``, ``generate_content``,
  ``execute_tool`` duplicates of the plugin's layers) is a :class:`Passage`:
  non-recording, passing its parent's context through, and remembering the
  nearest node around it, so the plugin's agent and tool spans find their
  node parent (:func:`enclosing`).

Tool and agent nodes stay one span each: an agent node has no node span
(ADK passes agent nodes through), and a tool node's span becomes the tool's
span when the plugin's ``before_tool`` runs inside it (:func:`adopt_tool`).

Nothing here imports ADK: node kinds are read from a ``Workflow``'s public
``graph`` by class name (:func:`node_kinds`).
"""

from __future__ import annotations

import asyncio
import sys
import time
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.trace import _Span as SdkSpan
from opentelemetry.trace import NonRecordingSpan, Span, SpanContext, Status, StatusCode
from opentelemetry.util import types
from opentelemetry.util._decorator import _agnosticcontextmanager
from opentelemetry.util.types import AttributeValue

from .. import semconv as sc
from ..ledger.spans import Entry, Ledger
from ..pipeline.routed_tracer import RoutedTracer
from ..semconv import Outcome
from . import keys

OP_INVOKE_NODE = "invoke_node"
UNROUTED = (
    "adk-otel: this workflow's nodes are not in adk-otel's tree: the run started on a tracer "
    "adk-otel does not answer for, so ADK's own node spans stay in its place. Another "
    "library replaced the tracer ADK's telemetry holds; instrument ADK with one library only "
    "(docs/coexistence.md)"
)
_NESTED = "gen_ai.workflow.nested"
_CANCELS = (asyncio.CancelledError, GeneratorExit, KeyboardInterrupt)
_KINDS_BY_CLASS = {
    "FunctionNode": "function",
    "JoinNode": "join",
    "Workflow": "workflow",
    "_ToolNode": "tool",
    "ToolNode": "tool",
    "ParallelWorker": "parallel_worker",
    "_ParallelWorker": "parallel_worker",
}


class Passage(NonRecordingSpan):
    """What ADK gets for a span adk-otel already has a layer for: nothing
    recorded, the parent's context passed through, the nearest node kept."""

    __slots__ = ("node",)

    def __init__(self, context: SpanContext, node: NodeSpan | RunRoot | None) -> None:
        super().__init__(context)
        self.node: NodeSpan | RunRoot | None = node


class RunRoot(NonRecordingSpan):
    """ADK's run span: passes the caller's context through until the plugin
    claims it for a run (``scope``); the run's top-level nodes open under
    that run's invocation span. A run no plugin claims (a Runner left
    un-instrumented) gets ADK's own spans instead: its root is then started
    late, on ADK's own tracer methods, at the time ADK opened it (``native``)."""

    __slots__ = (
        "attributes",
        "claimed",
        "latest",
        "name",
        "native",
        "own",
        "run_span",
        "runs",
        "scope",
        "started",
        "workflow",
    )
    natives: int = 0
    """Runs no plugin claimed whose ADK spans are open: while there are none,
    no span can be one of ADK's own (``_is_native`` is not asked)."""

    def __init__(
        self,
        context: SpanContext,
        workflow: str | None,
        *,
        own: trace.Tracer,
        name: str,
        attributes: types.Attributes,
    ) -> None:
        super().__init__(context)
        self.workflow: str | None = workflow
        self.scope: NodeScope | None = None
        """The run's node scope (a Workflow root's run, claimed)."""
        self.claimed: bool = False
        """A plugin traces the run (its ``before_run`` found this span current)."""
        self.runs: dict[str, int] | None = None
        """Node name -> runs started under the root (for the node path); made
        with the first node (most runs are an agent's, with no node at all)."""
        self.latest: dict[str, NodeSpan] | None = None
        """Node name -> its latest run under the root (for attempts)."""
        self.own: trace.Tracer = own
        self.name: str = name
        self.attributes: types.Attributes = attributes
        self.started: int = time.time_ns()
        self.native: Span | None = None
        """ADK's own run span, started when the first span of an unclaimed run opens."""
        self.run_span: Span | None = None
        """The invocation span of the run that claimed it (see :meth:`get_span_context`)."""

    def get_span_context(self) -> SpanContext:
        """Claimed, this span stands for the run's invocation span: whatever
        ADK's runner (its session, artifact and memory services, compaction),
        another plugin or a node's own code starts under ADK's run span is a
        child of the invocation span, as it would be of ADK's own run span."""
        run_span = self.run_span
        return run_span.get_span_context() if run_span is not None else self._context

    def native_context(self, context: otel_context.Context | None) -> otel_context.Context:
        """``context`` with ADK's own run span in place of this one: for the
        spans of a run no plugin claimed."""
        if self.native is None:
            RunRoot.natives += 1
            self.native = self.own.start_span(
                self.name,
                trace.set_span_in_context(NonRecordingSpan(self._context)),
                attributes=self.attributes,
                start_time=self.started,
            )
        return trace.set_span_in_context(self.native, context)

    # What ADK does to its run span reaches ADK's own one, when there is one.
    def set_attribute(self, key: str, value: AttributeValue) -> None:
        if self.native is not None:
            self.native.set_attribute(key, value)

    def set_attributes(self, attributes: Mapping[str, AttributeValue]) -> None:
        if self.native is not None:
            self.native.set_attributes(attributes)

    def set_status(self, status: Status | StatusCode, description: str | None = None) -> None:
        if self.native is not None:
            self.native.set_status(status, description)

    def record_exception(
        self,
        exception: BaseException,
        attributes: types.Attributes = None,
        timestamp: int | None = None,
        escaped: bool = False,
    ) -> None:
        if self.native is not None:
            self.native.record_exception(exception, attributes, timestamp, escaped)

    def end(self, end_time: int | None = None) -> None:
        if self.native is not None:
            self.native.end(end_time)
            RunRoot.natives -= 1


class NodeScope:
    """What a run's node spans need from the plugin that traces the run."""

    __slots__ = ("__weakref__", "classify", "entry", "kinds", "ledger", "open_paths", "path")

    def __init__(
        self,
        ledger: Ledger,
        entry: Entry,
        *,
        path: str,
        kinds: Mapping[str, str],
        classify: Callable[[BaseException], Mapping[str, AttributeValue]],
    ) -> None:
        self.ledger: Ledger = ledger
        self.entry: Entry = entry
        """The run's invocation entry: the parent of its top-level nodes."""
        self.path: str = path
        """The root workflow's node path (``flow@1``)."""
        self.kinds: Mapping[str, str] = kinds
        self.classify: Callable[[BaseException], Mapping[str, AttributeValue]] = classify
        """An exception -> its failure attributes (category, retryable)."""
        self.open_paths: dict[str, NodeSpan] = {}
        """Node path -> its open span: where an event's route is written."""

    def route(self, path: str, route: object) -> bool:
        """The route a node's output event chose, on that node's span (while
        it is open: ADK emits the event before the node ends)."""
        node = self.open_paths.get(path)
        if node is None or node.entry.ended:
            return False
        value: AttributeValue = [str(r) for r in route] if isinstance(route, list) else str(route)
        self.ledger.annotate(node.entry, sc.ADK_NODE_ROUTE, value)
        return True

    def names_root(self, workflow: str) -> None:
        """The run's root turned out to be the workflow ``workflow``: its
        invocation span says so, as when instrument() knew it beforehand."""
        opened = self.entry.opened_with or {}
        if sc.GEN_AI_WORKFLOW_NAME not in opened and sc.GEN_AI_AGENT_NAME not in opened:
            self.ledger.retype(
                self.entry,
                {
                    sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_WORKFLOW,
                    sc.GEN_AI_WORKFLOW_NAME: workflow,
                },
            )


_SCOPES: weakref.WeakValueDictionary[int, NodeScope] = weakref.WeakValueDictionary()
"""Span id of a run's invocation span -> its node scope, while anything of
the run holds the scope: a root workflow ADK opens under the invocation span
itself (ADK 2.5 does, after ``before_run``) finds its run there."""


def run_root(current: Span) -> RunRoot | None:
    """ADK's run span as adk-otel answered it (``current``, or what ``current``
    wraps), or None when ADK's run span is not one of adk-otel's."""
    found = _node_of(current)
    return found if type(found) is RunRoot else None


def claim_root(current: Span, scope: NodeScope) -> bool:
    """Claim ADK's run span for a run: ``current`` is the span current in
    ``before_run``. False when it is not one of adk-otel's (no node spans then)."""
    span_id = scope.entry.span.get_span_context().span_id
    if span_id:
        _SCOPES[span_id] = scope
    root = run_root(current)
    if root is None:
        return False
    root.scope = scope
    root.claimed = True
    return True


def root_path(current: Span, fallback: str | None) -> str:
    """The root workflow's node path, from ADK's run span when it names it."""
    root = run_root(current)
    name = root.workflow if root is not None else None
    return f"{name or fallback or 'workflow'}@1"


def enclosing(current: Span) -> NodeSpan | None:
    """The node span around ``current`` (the span current in an agent or tool
    hook), or None outside any node."""
    node = _node_of(current)
    return node if type(node) is NodeSpan else None


def node_kinds(root: Any) -> dict[str, str]:
    """Node name -> kind (function, join, workflow, tool, agent, ...) for the
    nodes of a ``Workflow`` and the workflows nested in it, from their public
    ``graph``; empty for anything else. A name used twice keeps its first kind."""
    kinds: dict[str, str] = {}
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        graph = getattr(node, "graph", None)
        for child in getattr(graph, "nodes", None) or ():
            name = getattr(child, "name", None)
            if not isinstance(name, str) or name.startswith("__"):
                continue
            kinds.setdefault(name, _kind_of(child))
            stack.append(child)
    return kinds


def _kind_of(node: Any) -> str:
    for cls in type(node).__mro__:
        kind = _KINDS_BY_CLASS.get(cls.__name__)
        if kind is not None:
            return kind
        if cls.__name__ == "BaseAgent":
            return "agent"
    return "node"


class NodeSpan(Span):
    """A node run's span as ADK holds it: writes go to the ledger entry's
    span, the outcome is decided when ADK ends it (see the module doc)."""

    __slots__ = (
        "attempt",
        "entry",
        "error",
        "failed",
        "latest",
        "name",
        "outcome",
        "path",
        "runs",
        "scope",
        "tool_key",
    )

    def __init__(self, scope: NodeScope, entry: Entry, name: str, path: str, attempt: int) -> None:
        self.scope: NodeScope = scope
        self.entry: Entry = entry
        self.name: str = name
        self.path: str = path
        self.attempt: int = attempt
        self.outcome: Outcome | None = None
        """How ADK ended it (None while open, or when a closer ended it first)."""
        self.error: BaseException | None = None
        """The exception ADK recorded on the span (a failed attempt, or a
        child's failure a workflow kept as data)."""
        self.failed: str | None = None
        """An ERROR status ADK set without an exception (its description)."""
        self.runs: dict[str, int] | None = None
        """Child node name -> runs started under this node (for paths)."""
        self.latest: dict[str, NodeSpan] | None = None
        """Child node name -> its latest run under this node (for attempts)."""
        self.tool_key: object = None
        """The tool call's ledger key, when this node is a tool node whose
        span became the tool's span (see adopt_tool)."""

    # -- what ADK (and the node's own code) calls -------------------------

    def get_span_context(self) -> SpanContext:
        return self.entry.span.get_span_context()

    def is_recording(self) -> bool:
        return self.entry.recording and not self.entry.ended

    def set_attributes(self, attributes: Mapping[str, AttributeValue]) -> None:
        if not self.entry.ended:
            self.entry.span.set_attributes(attributes)

    def set_attribute(self, key: str, value: AttributeValue) -> None:
        if not self.entry.ended:
            self.entry.span.set_attribute(key, value)

    def add_event(
        self,
        name: str,
        attributes: types.Attributes = None,
        timestamp: int | None = None,
    ) -> None:
        if not self.entry.ended:
            self.entry.span.add_event(name, attributes, timestamp)

    def update_name(self, name: str) -> None:
        if not self.entry.ended:
            self.entry.span.update_name(name)

    def set_status(self, status: Status | StatusCode, description: str | None = None) -> None:
        code = status.status_code if isinstance(status, Status) else status
        if code is StatusCode.ERROR and self.error is None:
            text = status.description if isinstance(status, Status) else description
            self.failed = text or "error"

    def record_exception(
        self,
        exception: BaseException,
        attributes: types.Attributes = None,
        timestamp: int | None = None,
        escaped: bool = False,
    ) -> None:
        # Recorded (sanitised, classified) once, as the span ends.
        self.error = exception
        self.failed = None

    def end(self, end_time: int | None = None) -> None:
        try:
            self._end()
        except Exception:
            self.scope.ledger._failed("ending a node span")

    def _end(self) -> None:
        entry, ledger = self.entry, self.scope.ledger
        if self.scope.open_paths.get(self.path) is self:
            del self.scope.open_paths[self.path]
        if self.tool_key is not None:
            ledger.unalias(self.tool_key, entry)
        if entry.ended:
            return
        if entry.pending is not None:
            ledger.settle(entry)  # a tool node: its tool hooks decided
            return
        unwinding = sys.exc_info()[1]
        error = self.error
        if error is None and isinstance(unwinding, Exception):
            error = unwinding  # ADK always records it first; never counted twice
        if isinstance(unwinding, _CANCELS) and error is None:
            self.outcome = Outcome.CANCELLED
            ledger.end_entry(entry, Outcome.CANCELLED, reason="cancelled")
        elif error is not None:
            self.outcome = Outcome.ERROR
            ledger.end_entry(entry, Outcome.ERROR, error=error, extra=self.scope.classify(error))
        elif self.failed is not None:
            self.outcome = Outcome.ERROR
            ledger.end_entry(entry, Outcome.ERROR, reason="node_failed", description=self.failed)
        else:
            self.outcome = Outcome.OK
            ledger.end_entry(entry, Outcome.OK)


def adopt_tool(node: NodeSpan, tool_name: str, key: object) -> Entry | None:
    """A tool node's span becomes its tool call's span (one span per unit):
    when the tool hooks run directly inside the node that runs that tool.
    Returns the entry to treat as the tool call's, or None."""
    if node.tool_key is not None or node.entry.ended or node.entry.children:
        return None
    if node.name != tool_name:
        return None
    node.tool_key = key
    node.scope.ledger.alias(key, node.entry)
    return node.entry


class NodeTracer(RoutedTracer):
    """The tracer ADK's own spans are made with under adk-otel (see the module
    doc). Every span of a run no plugin claimed (a Runner left
    un-instrumented) is ADK's own, made by ``sdk_tracer``; in a claimed run,
    every span but a node's passes the parent's context through, as a
    switched-off scope would. ``native`` (ADK's own spans kept) hands every
    call to ``sdk_tracer``: the SDK's tracer, or the tracer ADK holds as its
    class defines it (``pipeline/held_tracer.py``)."""

    def __init__(self, sdk_tracer: trace.Tracer, *, native: bool = False) -> None:
        super().__init__(sdk_tracer, native=native)
        self._node_keys = keys.nodes()

    def start_span(
        self,
        name: str,
        context: otel_context.Context | None = None,
        kind: trace.SpanKind = trace.SpanKind.INTERNAL,
        attributes: types.Attributes = None,
        links: Sequence[trace.Link] | None = None,
        start_time: int | None = None,
        record_exception: bool = True,
        set_status_on_exception: bool = True,
    ) -> Span:
        if self.native:
            return self.sdk_tracer.start_span(
                name,
                context,
                kind,
                attributes,
                links,
                start_time,
                record_exception,
                set_status_on_exception,
            )
        parent = trace.get_current_span(context)
        operation = attributes.get(sc.GEN_AI_OPERATION_NAME) if attributes else None
        if operation == OP_INVOKE_NODE or (
            operation == sc.OP_INVOKE_WORKFLOW and attributes and attributes.get(_NESTED)
        ):
            above = _node_of(parent)
            unclaimed = type(above) is RunRoot and not above.claimed
            if above is not None and not unclaimed:
                node = self._open(name, parent, above, attributes or {}, operation)
                if node is not None:
                    return node
        elif operation == sc.OP_INVOKE_WORKFLOW or name == "invocation":
            if RunRoot.natives and _is_native(parent):
                return self._native(name, context, kind, attributes, links, start_time)
            workflow = attributes.get(sc.GEN_AI_WORKFLOW_NAME) if attributes else None
            root = RunRoot(
                parent.get_span_context(),
                workflow if isinstance(workflow, str) else None,
                own=self.sdk_tracer,
                name=name,
                attributes=attributes,
            )
            # Opened after before_run (ADK 2.5's root workflow): its run is known.
            # (ADK's live runs open it under no span: the run current here then.)
            scope = root.scope = _scope_of(parent) or _scope_of(trace.get_current_span())
            if scope is not None:
                root.claimed = True
                if root.workflow is not None:
                    scope.names_root(root.workflow)
            return root
        else:
            above = _node_of(parent)
            unclaimed = type(above) is RunRoot and not above.claimed
        if unclaimed:
            # A run no plugin traces (a Runner left un-instrumented): ADK's own spans.
            context = above.native_context(context)  # type: ignore[union-attr]
            return self._native(name, context, kind, attributes, links, start_time)
        if RunRoot.natives and _is_native(parent):
            return self._native(name, context, kind, attributes, links, start_time)
        return Passage(parent.get_span_context(), above)

    def _native(
        self,
        name: str,
        context: otel_context.Context | None,
        kind: trace.SpanKind,
        attributes: types.Attributes,
        links: Sequence[trace.Link] | None,
        start_time: int | None,
    ) -> Span:
        return self.sdk_tracer.start_span(name, context, kind, attributes, links, start_time)

    @_agnosticcontextmanager
    def start_as_current_span(
        self,
        name: str,
        context: otel_context.Context | None = None,
        kind: trace.SpanKind = trace.SpanKind.INTERNAL,
        attributes: types.Attributes = None,
        links: Sequence[trace.Link] | None = None,
        start_time: int | None = None,
        record_exception: bool = True,
        set_status_on_exception: bool = True,
        end_on_exit: bool = True,
    ) -> Iterator[Span]:
        span = self.start_span(name, context, kind, attributes, links, start_time)
        with trace.use_span(
            span,
            end_on_exit=end_on_exit,
            record_exception=record_exception,
            set_status_on_exception=set_status_on_exception,
        ) as current:
            yield current

    def _open(
        self,
        name: str,
        parent: Span,
        above: NodeSpan | RunRoot,
        attributes: Mapping[str, Any],
        operation: str,
    ) -> NodeSpan | None:
        scope = above.scope
        if scope is None:
            return None  # a run no plugin claimed: pass through
        node_name = name.split(" ", 1)[1] if " " in name else name
        runs, latest = above.runs, above.latest
        if runs is None or latest is None:
            runs, latest = above.runs, above.latest = {}, {}
        previous = latest.get(node_name)
        if previous is not None and previous.outcome is Outcome.ERROR:
            # The same node again right after it failed: ADK's retry
            # (RetryConfig) runs it again under the same path.
            attempt, path = previous.attempt + 1, previous.path
        else:
            count = runs[node_name] = runs.get(node_name, 0) + 1
            if isinstance(above, NodeSpan):
                base = above.path
            else:
                base = f"{above.workflow}@1" if above.workflow else scope.path
            attempt, path = 1, f"{base}/{node_name}@{count}"
        workflow = operation == sc.OP_INVOKE_WORKFLOW
        kind = "workflow" if workflow else scope.kinds.get(node_name) or "node"
        run = scope.entry.opened_with or {}
        start: dict[str, AttributeValue] = {
            sc.ADK_SPAN_KIND: sc.SpanKind.NODE.value,
            sc.OPENINFERENCE_SPAN_KIND: sc.OI_CHAIN,  # a step of the workflow in Phoenix
            sc.GEN_AI_OPERATION_NAME: operation,
            sc.ADK_NODE_NAME: node_name,
            sc.ADK_NODE_PATH: path,
            sc.ADK_NODE_KIND: kind,
            sc.ADK_NODE_ATTEMPT: attempt,
        }
        for copied in (sc.ADK_INVOCATION_ID, sc.ADK_APP_NAME, sc.GEN_AI_CONVERSATION_ID):
            value = run.get(copied)
            if value is not None:
                start[copied] = value
        if workflow:
            start[sc.GEN_AI_WORKFLOW_NAME] = node_name
            start[_NESTED] = True
        parent_entry = above.entry if isinstance(above, NodeSpan) else scope.entry
        placed = parent_entry.opened_with
        if placed:
            for inherited in (sc.ADK_LOOP_ITERATION, sc.ADK_PARALLEL_BRANCH):
                if inherited in placed:
                    start[inherited] = placed[inherited]
        key = next(self._node_keys)
        entry = scope.ledger.start(key, name, parent=parent_entry, attributes=start)
        node = latest[node_name] = NodeSpan(scope, entry, node_name, path, attempt)
        scope.open_paths[path] = node
        return node


def _scope_of(span: Span) -> NodeScope | None:
    cls = type(span)
    found = span if cls is RunRoot else None if cls in _UNWRAPPED else _node_of(span)
    if type(found) is RunRoot:
        return found.scope
    return _SCOPES.get(span.get_span_context().span_id) if _SCOPES else None


def _node_of(span: Span) -> NodeSpan | RunRoot | None:
    """The node (or run root) ``span`` is or passes through, also when another
    library's tracer handed ADK a wrapper around it (OpenInference's, which
    Phoenix's provider puts around every span, keeps it as ``__wrapped__``)."""
    cls = type(span)
    if cls is NodeSpan or cls is RunRoot:
        return span  # type: ignore[return-value]
    if cls is Passage:
        return span.node  # type: ignore[attr-defined, no-any-return]
    if cls in _UNWRAPPED:
        return None
    wrapped = getattr(span, "__wrapped__", None)
    return _node_of(wrapped) if wrapped is not None else None


_UNWRAPPED = frozenset({NonRecordingSpan, SdkSpan})
"""Span classes that wrap nothing (adk-otel's own spans, a caller's, ADK's)."""


def _is_native(span: Span) -> bool:
    """Whether ``span`` is one of ADK's own recording spans (a run no plugin
    traces): what ADK opens under it stays ADK's own."""
    scope = getattr(span, "instrumentation_scope", None)
    return getattr(scope, "name", None) == sc.ADK_SCOPE and span.is_recording()
