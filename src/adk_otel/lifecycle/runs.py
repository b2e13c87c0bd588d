"""The runs the plugin is tracing, and the nets that close them.

A run (one ``Runner.run_async`` or ``run_live`` call) is found by its
``InvocationContext`` object in the run hooks and by invocation id in every
other hook (the latest run of that id). ADK gives no terminal hook when the
task running an invocation ends first or the wrapper closes it early, so each
run also watches its task and registers with the wrapper (``runner.py``).
"""

from __future__ import annotations

import asyncio
import collections
import functools
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from opentelemetry import trace

from .. import semconv as sc
from ..integrations.propagation import run_parent
from ..ledger.spans import Entry, current_context
from ..ledger.telemetry import TelemetryLedger
from ..reading import attributes as attrs
from ..reading import user_id as user_ids
from ..reading.failures import Failure
from ..semconv import Outcome
from . import keys, sharing
from .aborts import abort_reason
from .nodes import NodeScope
from .runner import CURRENT_WATCH, RunWatch


@dataclass(slots=True)
class Reported:
    """What a remote agent reported without raising (remote.py): a failed
    or cancelled task. It decides the agent span's outcome at ``after_agent``."""

    error: tuple[str, str | None] | None = None
    """``(close reason, description)`` of a failure: the agent's successful end is an error."""
    failure: Failure | None = None
    """Its classification."""
    cancelled: bool = False
    """The remote task was ``canceled``."""


@dataclass(eq=False, slots=True)
class Run:
    """One ``Runner.run_async`` (or ``run_live``) call as the plugin sees it."""

    entry: Entry
    invocation_id: str
    watch: RunWatch | None
    live: bool = False
    agents: dict[str, list[Entry]] = field(default_factory=dict)
    task: asyncio.Task[Any] | None = None
    on_task_done: Callable[[asyncio.Task[Any]], None] | None = None
    cancelling_at_start: int = 0
    """The starting task's ``cancelling()`` when the run began (see is_cancelled)."""
    failures: dict[int, tuple[BaseException, Failure]] | None = None
    """Exceptions classified in this run, so every layer one fails shows the
    category of the layer it came from (a tool's exception stays ``tool_exception``)."""
    transfers: dict[str, list[Entry]] | None = None
    """Target agent name -> agents that called ``transfer_to_agent`` for it."""
    nodes: NodeScope | None = None
    """Its workflow nodes' bookkeeping, when ADK's node tracing reaches adk-otel."""
    iterations: weakref.WeakKeyDictionary[Entry, dict[str, int]] | None = None
    """A ``LoopAgent``'s span -> how many times each of its agents ran under it
    (made at the first loop: most runs have none)."""
    waiting: tuple[str, ...] = ()
    """Interrupt ids (a request for human input, a long-running tool's call)
    the run emitted and has not had answered: a run ending so is paused."""
    manager: Any = None
    """The plugin manager of the Runner that started the run (sharing.py)."""
    reported: dict[Entry, Reported] | None = None
    """Remote agents' spans -> what they reported (made at the first report)."""
    ids: attrs.Attributes = field(default_factory=dict)
    """The run's invocation and conversation ids, made safe once: every
    agent and model span under it carries them."""
    streams: bool = False
    """Whether its model calls stream (``StreamingMode.SSE``)."""
    quiet: bool = False
    """Nothing under it can be recorded (see :func:`is_quiet`): its agent,
    model and tool hooks return at once."""
    adk_root: Any = None
    """ADK's run span as adk-otel answered it (a ``nodes.RunRoot``), when it is one."""
    began: bool = False
    """Its ``before_run`` ran (the span may open earlier, at ``on_user_message``)."""

    def report(self, entry: Entry) -> Reported:
        """What ``entry``'s remote agent reported so far (made empty at first)."""
        reported = self.reported
        if reported is None:
            reported = self.reported = {}
        found = reported.get(entry)
        if found is None:
            found = reported[entry] = Reported()
        return found

    @property
    def closing_early(self) -> bool:
        return self.watch is not None and self.watch.closing_early

    def innermost_agent(self, name: str | None) -> Entry | None:
        stack = self.agents.get(name or "")
        while stack and stack[-1].ended:
            stack.pop()
        return stack[-1] if stack else None


_RESUMABLE = 1024
"""Paused runs remembered per plugin for the run that resumes them."""


class Close(Protocol):
    """Ends a run with an outcome, a close reason and the error, if any."""

    def __call__(
        self,
        run: Run,
        outcome: Outcome,
        *,
        reason: str | None = None,
        error: BaseException | None = None,
    ) -> None: ...


@dataclass(slots=True)
class _Read:
    """What a run's span is opened from, read off its ``InvocationContext``."""

    app_name: Any
    root: Any
    root_name: Any
    invocation_id: Any
    session_id: Any
    user_id: Any
    carrier: Any
    live: bool
    streams: bool


def _read(invocation_context: Any) -> _Read:
    """ADK's invocation context read directly (once per run); an object of
    another shape is read defensively."""
    try:
        root = invocation_context.agent
        custom = invocation_context.run_config.custom_metadata
        mode = invocation_context.run_config.streaming_mode
        return _Read(
            invocation_context.app_name,
            root,
            root.name if root is not None else None,
            invocation_context.invocation_id,
            invocation_context.session.id,
            invocation_context.user_id,
            custom.get(attrs.A2A_METADATA_KEY) if custom.__class__ is dict else None,
            invocation_context.live_request_queue is not None,
            mode is not None and mode.value == "sse",
        )
    except AttributeError:
        root = getattr(invocation_context, "agent", None)
        return _Read(
            getattr(invocation_context, "app_name", None),
            root,
            getattr(root, "name", None) if root is not None else None,
            getattr(invocation_context, "invocation_id", ""),
            getattr(getattr(invocation_context, "session", None), "id", None),
            getattr(invocation_context, "user_id", None),
            attrs.incoming_trace_carrier(invocation_context),
            getattr(invocation_context, "live_request_queue", None) is not None,
            attrs.streams(getattr(invocation_context, "run_config", None)),
        )


class Runs:
    """The runs in flight, and the agent spans opened outside any."""

    def __init__(self) -> None:
        self.by_context: dict[int, Run] = {}
        """``id()`` of a run's ``InvocationContext`` -> the run."""
        self.by_invocation: dict[str, list[Run]] = {}
        """Invocation id -> its runs, the latest last."""
        self.orphans: dict[tuple[str, str], Entry] = {}
        """Agent spans opened with no run in sight (plugin added mid-run)."""
        self.workflows: dict[str, str] = {}
        """App name -> its root ``Workflow``'s name, for apps ``instrument()``
        saw with one (ADK 2.5 through 2.13 give a Workflow run no agent to read)."""
        self.resumable: collections.OrderedDict[str, trace.SpanContext] = collections.OrderedDict()
        """Invocation id -> the span of its latest paused run (the newest
        ``_RESUMABLE`` kept), which the run resuming it links to."""
        self.kinds: dict[str, dict[str, str]] = {}
        """App name -> its root workflow's node names -> kinds (nodes.node_kinds)."""

    def note_workflow(
        self, app_name: Any, workflow: str | None, kinds: dict[str, str] | None = None
    ) -> None:
        """App ``app_name``'s root is the Workflow ``workflow`` (None: not one)."""
        if isinstance(app_name, str) and app_name:
            if workflow is not None:
                self.workflows[app_name] = workflow
                self.kinds[app_name] = kinds or {}
            else:
                self.workflows.pop(app_name, None)
                self.kinds.pop(app_name, None)

    def paused(self, run: Run) -> None:
        """``run`` stopped to wait for input: a run resuming its invocation links to it."""
        context = run.entry.span.get_span_context()
        if not context.is_valid:
            return
        resumable = self.resumable
        resumable[run.invocation_id] = context
        resumable.move_to_end(run.invocation_id)
        while len(resumable) > _RESUMABLE:
            resumable.popitem(last=False)

    def latest(self, invocation_id: str | None) -> Run | None:
        runs = self.by_invocation.get(invocation_id or "")
        return runs[-1] if runs else None

    def open(
        self,
        ledger: TelemetryLedger,
        invocation_context: Any,
        user_id_mode: user_ids.UserIdMode,
        close: Close,
        adk_run_span: Any = None,
        *,
        current: bool = False,
    ) -> Run:
        """Start the run's invocation span and track the run until ``close``."""
        read = _read(invocation_context)
        # A run served over A2A continues the caller's trace (integrations/propagation.py).
        if read.carrier is None:
            parent_context, continued = current_context(), False
        else:
            parent_context, continued = run_parent(read.carrier)
        # ADK (2.5 through 2.13) gives a run of a Workflow root no agent on
        # its invocation context: the root is known from instrument() only.
        workflow = self.workflows.get(read.app_name or "") if self.workflows else None
        if workflow is None and read.root is None:
            # ADK's own run span names the root workflow (nodes.RunRoot).
            workflow = getattr(adk_run_span, "workflow", None)
        opening = attrs.invocation_opening(read.app_name, read.root_name, workflow)
        ids = attrs.ids(read.invocation_id, read.session_id)
        attributes = {**opening.attributes, **ids}
        paused = self.resumable.pop(read.invocation_id, None) if self.resumable else None
        links = [trace.Link(paused, {sc.ADK_LINK: "resumes"})] if paused is not None else None
        if user_id_mode is not user_ids.UserIdMode.OFF:
            user_ids.put(attributes, read.user_id, user_id_mode)
        watch = CURRENT_WATCH.get()
        entry = ledger.start(
            keys.run(invocation_context),
            opening.name,
            parent_context=parent_context,
            kind=trace.SpanKind.SERVER if continued else trace.SpanKind.INTERNAL,
            attributes=attributes,
            anchor=invocation_context,
            links=links,
            clean=True,
            # Under instrument() the run executes in a private context (see
            # runner.py), so the invocation span can be current for the run's
            # callbacks without ever being current in the caller's context.
            current=watch is not None and current,
        )
        run = Run(entry, read.invocation_id, watch, read.live)  # positional: see ledger.Entry
        run.ids, run.streams = ids, read.streams
        self.by_context[id(invocation_context)] = run
        runs = self.by_invocation.get(read.invocation_id)
        if runs is None:
            self.by_invocation[read.invocation_id] = [run]
        else:
            runs.append(run)
        if watch is not None:
            watch.closers.append(functools.partial(close, run))
        _watch_task(run, close)
        return run

    def refile(self, run: Run, invocation_context: Any) -> None:
        """File ``run`` again under its invocation id, when a plugin's rewritten
        message moved it (a function response resuming another invocation)
        between the hook that opened it and ``before_run``."""
        invocation_id = getattr(invocation_context, "invocation_id", run.invocation_id)
        if invocation_id == run.invocation_id or not isinstance(invocation_id, str):
            return
        runs = self.by_invocation.get(run.invocation_id)
        if runs and run in runs:
            runs.remove(run)
            if not runs:
                del self.by_invocation[run.invocation_id]
        run.invocation_id = invocation_id
        self.by_invocation.setdefault(invocation_id, []).append(run)
        run.ids = attrs.ids(invocation_id, getattr(invocation_context.session, "id", None))
        run.entry.span.set_attributes(run.ids)

    def pop_agent(self, invocation_id: str, name: str) -> tuple[Entry | None, Run | None]:
        """The innermost open span of agent ``name``, taken off its run's
        stack (its terminal hook is running), and the run."""
        run = self.latest(invocation_id)
        if run is None:
            return self.orphans.pop(keys.orphan(invocation_id, name), None), None
        entry = run.innermost_agent(name)
        if entry is not None:
            run.agents[name].pop()
        return entry, run

    def forget(self, run: Run) -> None:
        anchor_id = run.entry.key[1] if isinstance(run.entry.key, tuple) else None
        if anchor_id is not None and self.by_context.get(anchor_id) is run:
            del self.by_context[anchor_id]
        runs = self.by_invocation.get(run.invocation_id)
        if runs and run in runs:
            runs.remove(run)
            if not runs:
                del self.by_invocation[run.invocation_id]
        if run.task is not None:
            if run.on_task_done is not None:
                run.task.remove_done_callback(run.on_task_done)
            run.task = run.on_task_done = None

    def forget_all(self) -> None:
        for run in list(self.by_context.values()):
            self.forget(run)
        self.orphans.clear()

    def unwinding(self) -> set[asyncio.Task[Any]]:
        """The tasks of runs being cancelled since they started (the current
        task aside): they are unwinding and will end their runs themselves."""
        current = asyncio.current_task()
        return {
            run.task
            for run in self.by_context.values()
            if run.task is not None
            and run.task is not current
            and not run.task.done()
            and run.task.cancelling() > run.cancelling_at_start
        }


def is_quiet(run: Run, ledger: TelemetryLedger) -> bool:
    """Whether nothing under ``run`` can be recorded, so its agent, model and
    tool hooks may do nothing at all: its trace was sampled out at the root
    and the sampler follows the parent (every child would share the root's
    non-recording span), no metrics are recorded, no content or details
    log is kept and no dev UI reads its spans. Only under ``instrument()``
    (the root's context is then current for the whole run, in the run's
    private context, so every callback and library call inside it sees the
    trace) and for a run of agents (a workflow's nodes and a live session
    keep their bookkeeping). Decided once, at the root."""
    return (
        not run.entry.recording
        and not ledger.records_all
        and run.watch is not None
        and run.nodes is None
        and not run.live
        and ledger.details is None
    )


def is_cancelled(run: Run | None = None) -> bool:
    """Whether the current task is being cancelled *during* this run. A task
    that once swallowed a ``CancelledError`` without ``uncancel()`` (a common
    worker loop) keeps ``cancelling() > 0`` for good: counted from the run's
    start, so its later runs are not all recorded cancelled."""
    try:
        task = asyncio.current_task()
    except RuntimeError:
        return False
    if task is None:
        return False
    baseline = run.cancelling_at_start if run is not None and run.task is task else 0
    return task.cancelling() > baseline


def _watch_task(run: Run, close: Close) -> None:
    """Record the task that started the run (``is_cancelled`` counts from its
    ``cancelling()`` now; ``Runs.unwinding`` reads it) and, without the runner
    wrapper (``adk web``, ``App``) or for a live run, add the safety net: if
    that task ends while the run is still open, close it."""
    try:
        task = asyncio.current_task()
    except RuntimeError:
        return
    if task is None:
        return
    run.task, run.cancelling_at_start = task, task.cancelling()
    if run.watch is not None and not run.live:
        # Under instrument() the wrapper drives ADK's generator in this task
        # and ends the run however it stops (runner.py). A callback the wrapper
        # makes redundant doubled the young-generation collections of a tool
        # run (benchmarks/README.md, "The collector's runs under instrument()").
        return

    def on_task_done(done: asyncio.Task[Any]) -> None:
        if run.closing_early:
            # The task is ADK's own (run_live's event pump), cancelled by
            # ADK because our consumer is closing the run early.
            close(run, Outcome.INCOMPLETE, reason="consumer_closed")
            return
        if done.cancelled():
            close(run, Outcome.CANCELLED, reason="cancelled")
            return
        aborted = abort_reason(done.exception())
        if aborted is not None:
            close(run, Outcome.CANCELLED, reason=aborted)
        else:
            close(run, Outcome.INCOMPLETE, reason="task_ended")

    run.on_task_done = on_task_done
    task.add_done_callback(on_task_done)


def put_first(plugin: Any, invocation_context: Any) -> bool:
    """Put ``plugin`` first in the run's plugin list, as ``instrument()``
    does, when it was registered later (``--extra_plugins`` appends it): every
    other plugin's callbacks then see the span of their layer. Done while ADK
    iterates the list for before_run: moving the current item to the front
    leaves the items after it where they were, so none is skipped or repeated.
    True when it already was first (its close witness aside, see sharing.py)."""
    plugins = invocation_context.plugin_manager.plugins  # public on ADK 2.5 through 2.13
    if plugins.__class__ is not list or sharing.leads(plugins, plugin):
        return True
    if plugin in plugins:
        plugins.remove(plugin)
        plugins.insert(0, plugin)
    return False
