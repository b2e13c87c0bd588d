"""``AdkOtelPlugin``: ADK plugin hooks -> span ledger calls.

Each hook is a few lines: find the run, open or end a span. Hooks never raise
into ADK (a failure is logged once and swallowed) and always return ``None``,
so the plugin can never short-circuit or alter an agent run.

Pairing a "before" with its terminal hook (see the project's lifecycle notes):
a run by its ``InvocationContext`` object, an agent run by agent name within
its run (a stack, for loop iterations and retries), a model call by the
``EventActions`` object its callback context carries, a tool call by
``(invocation_id, function_call_id)``.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import itertools
import logging
import sys
import time
import weakref
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any

from google.adk.plugins.base_plugin import BasePlugin
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.util.types import AttributeValue

from . import a2a, coexistence, details, devui, failures, sanitize, shutdown, stability
from . import attributes as attrs
from . import semconv as sc
from . import user_id as user_ids
from .aborts import abort_reason
from .content import ContentCapture, ContentSettings, Redactor
from .content import resolve as resolve_content
from .details import DetailsLog
from .failures import ErrorClassifier, Failure
from .ledger import Entry, Ledger
from .metrics import TelemetryLedger, resolve_instruments
from .pipeline import TelemetrySettings, built_logger_provider, resolve_tracer
from .propagation import run_parent
from .provider_check import usable
from .redact import guarded
from .runner import CURRENT_WATCH, RunWatch
from .semconv import ADK_MODEL_CHUNKS, LIVE_MODEL_REQUEST_EVENT, Outcome

logger: logging.Logger = guarded(logging.getLogger(__name__))

_HookFn = Callable[..., Coroutine[Any, Any, None]]


def _never_raises(hook: Callable[..., None]) -> _HookFn:
    """The ADK hook (a coroutine function) for a plain method that does the
    work: instrumentation failures are logged once per hook, never raised.
    The work itself never awaits, so it needs no coroutine of its own (one
    fewer per hook call: hooks run several times per span)."""
    reported = False

    @functools.wraps(hook)
    async def guarded(self: AdkOtelPlugin, **kwargs: Any) -> None:
        nonlocal reported
        try:
            hook(self, **kwargs)
        except Exception:
            self._hook_failures += 1
            if not reported:
                reported = True
                logger.warning(
                    "adk-otel: %s failed; tracing continues", hook.__name__, exc_info=True
                )
        return None

    return guarded


@dataclass(eq=False)
class _Run:
    """One ``Runner.run_async`` (or ``run_live``) call as the plugin sees it."""

    entry: Entry
    invocation_id: str
    watch: RunWatch | None
    live: bool = False
    agents: dict[str, list[Entry]] = field(default_factory=dict)
    task: asyncio.Task[Any] | None = None
    on_task_done: Callable[[asyncio.Task[Any]], None] | None = None
    cancelling_at_start: int = 0
    """The starting task's ``cancelling()`` when the run began (see _is_cancelled)."""
    failures: dict[int, tuple[BaseException, Failure]] | None = None
    """Exceptions classified in this run, so every layer one fails shows the
    category of the layer it came from (a tool's exception stays ``tool_exception``)."""
    transfers: dict[str, list[Entry]] | None = None
    """Target agent name -> agents that called ``transfer_to_agent`` for it."""

    @property
    def closing_early(self) -> bool:
        return self.watch is not None and self.watch.closing_early

    def innermost_agent(self, name: str | None) -> Entry | None:
        stack = self.agents.get(name or "")
        while stack and stack[-1].ended:
            stack.pop()
        return stack[-1] if stack else None


def _is_cancelled(run: _Run | None = None) -> bool:
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


class AdkOtelPlugin(BasePlugin):
    """Traces ADK runs: invocation, agent, model-call and tool-call spans.

    Usable on its own (``App(plugins=[AdkOtelPlugin()])`` or
    ``adk web --extra_plugins adk_otel.AdkOtelPlugin``); ``adk_otel.instrument``
    adds it for you and also wraps a Runner's generators so cancellation and
    early close end every span.
    """

    receives_a2a_responses = True
    """Remote agents' responses reach :meth:`remote_response` (see a2a.py)."""

    def __init__(
        self,
        name: str = "adk_otel",
        *,
        tracer_provider: trace.TracerProvider | None = None,
        keep_adk_spans: bool | None = None,
        meter_provider: Any = None,
        capture_content: bool | str | None = None,
        content_max_length: int | None = None,
        redact: Redactor | None = None,
        logger_provider: Any = None,
        details_as_span_event: bool | None = None,
        user_id: str | None = None,
        error_classifier: ErrorClassifier | None = None,
        result_failures: bool | None = None,
    ) -> None:
        super().__init__(name=name)
        self._classifier = error_classifier
        self._result_failures = failures.result_failures_enabled(result_failures)
        self._hook_failures = 0
        self._looked_around = False
        tracer_provider = usable("tracer_provider", tracer_provider)
        self._settings = TelemetrySettings(
            tracer_provider=tracer_provider,
            keep_adk_spans=keep_adk_spans,
            meter_provider=usable("meter_provider", meter_provider),
            logger_provider=usable("logger_provider", logger_provider),
            details_as_span_event=details_as_span_event,
        )
        self._content_settings = ContentSettings(capture_content, content_max_length, redact)
        self._content: ContentCapture | None = None
        """Active content policy; None (content capture off) skips all content work."""
        self._user_id_setting = user_id
        self._user_id = user_ids.UserIdMode.PLAIN
        """How invocation spans carry the user id (user_id.py)."""
        self._latest = False
        """``OTEL_SEMCONV_STABILITY_OPT_IN`` asks for the latest GenAI conventions."""
        self._workflows: dict[str, str] = {}
        """App name -> its root ``Workflow``'s name, for apps ``instrument()``
        saw with one (ADK 2.5 through 2.13 give a Workflow run no agent to read)."""
        self._ledger_instance: TelemetryLedger | None = None
        self._devui: devui.DevUi | None = None
        """Set when ADK's dev server reads this plugin's spans (see devui.py)."""
        if tracer_provider is not None or not isinstance(
            trace.get_tracer_provider(), trace.ProxyTracerProvider
        ):
            # A provider is known now: resolve at once, so ADK's spans are
            # switched off before the first run starts one.
            self.prepare()
        self._runs: dict[int, _Run] = {}
        self._runs_by_invocation: dict[str, list[_Run]] = {}
        self._keys = itertools.count()
        # Agent spans opened with no run in sight (plugin added mid-run).
        self._orphans: dict[tuple[str, str], Entry] = {}
        # Root agents whose remote agents already carry the trace (see a2a.py);
        # weak, so agents built per request are not kept alive.
        self._propagating: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()

    # -- configuration ---------------------------------------------------

    def configure(
        self,
        *,
        tracer_provider: trace.TracerProvider | None = None,
        keep_adk_spans: bool | None = None,
        meter_provider: Any = None,
        capture_content: bool | str | None = None,
        content_max_length: int | None = None,
        redact: Redactor | None = None,
        logger_provider: Any = None,
        details_as_span_event: bool | None = None,
        user_id: str | None = None,
        error_classifier: ErrorClassifier | None = None,
        result_failures: bool | None = None,
    ) -> None:
        """Change the options passed (``None`` keeps an option as it is). Spans
        already open stay in the same bookkeeping and are ended by their own
        hooks, whatever provider later spans go to."""
        settings, content = self._settings, self._content_settings
        if error_classifier is not None:
            self._classifier = error_classifier
        if result_failures is not None:
            self._result_failures = result_failures
        self._settings = TelemetrySettings(
            tracer_provider=_given(
                usable("tracer_provider", tracer_provider), settings.tracer_provider
            ),
            keep_adk_spans=_given(keep_adk_spans, settings.keep_adk_spans),
            meter_provider=_given(
                usable("meter_provider", meter_provider), settings.meter_provider
            ),
            logger_provider=_given(
                usable("logger_provider", logger_provider), settings.logger_provider
            ),
            details_as_span_event=_given(details_as_span_event, settings.details_as_span_event),
        )
        self._content_settings = ContentSettings(
            _given(capture_content, content.capture),
            _given(content_max_length, content.max_length),
            _given(redact, content.redact),
        )
        self._user_id_setting = _given(user_id, self._user_id_setting)
        ledger = self._ledger_instance
        if ledger is None:
            self.prepare()
            return
        self._content = resolve_content(self._content_settings)
        self._user_id = user_ids.resolve(self._user_id_setting)
        self._latest = stability.latest_gen_ai()
        ledger.retarget(
            resolve_tracer(self._settings),
            resolve_instruments(self._settings.meter_provider, latest=self._latest),
        )
        self._look_for_dev_ui()
        if ledger.details is not None:
            ledger.details.flush()
        ledger.details = self._details_log()

    def prepare(self) -> None:
        """Resolve the tracer provider now (``instrument()`` calls this)."""
        _ = self._ledger

    @property
    def _ledger(self) -> TelemetryLedger:
        # Resolved on first use, so a plugin built at import time still picks
        # up a provider (and content settings) the application configures later.
        ledger = self._ledger_instance
        if ledger is None:
            self._content = resolve_content(self._content_settings)
            self._user_id = user_ids.resolve(self._user_id_setting)
            self._latest = stability.latest_gen_ai()
            ledger = self._ledger_instance = TelemetryLedger(
                resolve_tracer(self._settings),
                resolve_instruments(self._settings.meter_provider, latest=self._latest),
            )
            ledger.details = self._details_log()
            self._look_for_dev_ui()
            _end_at_exit(self)
            shutdown.announce(self._settings.tracer_provider or trace.get_tracer_provider())
        return ledger

    def _look_for_dev_ui(self) -> None:
        provider = self._settings.tracer_provider or trace.get_tracer_provider()
        if not devui.served(provider):
            if self._devui is not None:
                self._devui.release_under(None)  # no dev UI any more: end what waits
            self._devui = None
        elif self._devui is None:
            self._devui = devui.DevUi(Ledger.annotate)

    def _details_log(self) -> DetailsLog | None:
        """Where model calls' details events go as log records; None when
        content capture has no EVENT mode, or they go as span events."""
        content, settings = self._content, self._settings
        if content is None or not content.on_event:
            return None
        if details.as_span_event(settings.details_as_span_event):
            return None
        log = details.resolve_logger(settings.logger_provider, built_logger_provider())
        return DetailsLog(log) if log is not None else None

    def note_root(self, app_name: Any, root: Any) -> None:
        """The root node of an app this plugin traces (``instrument()`` passes
        a Runner's or an App's): a ``Workflow`` root makes its runs
        ``invoke_workflow``. Only the name is kept."""
        name = attrs.workflow_name(root)
        if isinstance(app_name, str) and app_name:
            if name is not None:
                self._workflows[app_name] = name
            else:
                self._workflows.pop(app_name, None)

    @property
    def internal_errors(self) -> int:
        """Failures inside adk-otel since this plugin was made (a hook that
        raised, a span whose outcome could not be recorded): each is logged
        once per kind and counted here; no span is left open by one."""
        ledger = self._ledger_instance
        return self._hook_failures + (ledger.failures if ledger is not None else 0)

    @property
    def open_spans(self) -> int:
        """How many spans this plugin has open right now."""
        return len(self._ledger_instance) if self._ledger_instance else 0

    # -- runs ------------------------------------------------------------

    def _run_for(self, invocation_id: str | None) -> _Run | None:
        runs = self._runs_by_invocation.get(invocation_id or "")
        return runs[-1] if runs else None

    def _open_run(self, invocation_context: Any) -> _Run:
        # A run served over A2A continues the caller's trace (propagation.py).
        carrier = attrs.incoming_trace_carrier(invocation_context)
        if carrier is None:
            parent_context, continued = otel_context.get_current(), False
        else:
            parent_context, continued = run_parent(carrier)
        attributes = attrs.invocation(invocation_context, self._workflow_of(invocation_context))
        user_ids.put(attributes, getattr(invocation_context, "user_id", None), self._user_id)
        entry = self._ledger.start(
            ("run", id(invocation_context)),
            attrs.invocation_span_name(invocation_context),
            parent_context=parent_context,
            kind=trace.SpanKind.SERVER if continued else trace.SpanKind.INTERNAL,
            attributes=attributes,
            anchor=invocation_context,
        )
        run = _Run(
            entry=entry,
            invocation_id=getattr(invocation_context, "invocation_id", ""),
            watch=CURRENT_WATCH.get(),
            live=getattr(invocation_context, "live_request_queue", None) is not None,
        )
        self._runs[id(invocation_context)] = run
        self._runs_by_invocation.setdefault(run.invocation_id, []).append(run)
        if run.watch is not None:
            run.watch.closers.append(functools.partial(self._close_run, run))
        self._watch_task(run)
        return run

    def _workflow_of(self, invocation_context: Any) -> str | None:
        # ADK (2.5 through 2.13) gives a run of a Workflow root no agent on
        # its invocation context: the root is known from instrument() only.
        if not self._workflows:
            return None
        return self._workflows.get(getattr(invocation_context, "app_name", None) or "")

    def _watch_task(self, run: _Run) -> None:
        """Plugin-only safety net (``adk web``, ``App``): if the task that
        started the run ends while the run is still open, close it."""
        try:
            task = asyncio.current_task()
        except RuntimeError:
            return
        if task is None:
            return

        def on_task_done(done: asyncio.Task[Any]) -> None:
            if run.closing_early:
                # The task is ADK's own (run_live's event pump), cancelled by
                # ADK because our consumer is closing the run early.
                self._close_run(run, Outcome.INCOMPLETE, "consumer_closed", None)
                return
            if done.cancelled():
                self._close_run(run, Outcome.CANCELLED, "cancelled", None)
                return
            aborted = abort_reason(done.exception())
            if aborted is not None:
                self._close_run(run, Outcome.CANCELLED, aborted, None)
            else:
                self._close_run(run, Outcome.INCOMPLETE, "task_ended", None)

        run.task, run.on_task_done = task, on_task_done
        run.cancelling_at_start = task.cancelling()
        task.add_done_callback(on_task_done)

    def _close_run(
        self,
        run: _Run,
        outcome: Outcome,
        reason: str | None,
        error: BaseException | None,
        extra: Mapping[str, AttributeValue] | None = None,
    ) -> None:
        if self._devui is not None:
            self._devui.release_under(run.entry)
        if run.watch is not None and not run.watch.finished:
            # The run's own callbacks after ours still see its span; the
            # wrapper ends it when ADK's generator is done (close_remaining).
            self._ledger.conclude(run.entry, outcome, error, reason, extra=extra)
            return
        if not run.entry.ended:
            self._ledger.end_entry(run.entry, outcome, error, reason, extra=extra)
        self._forget(run)

    def _forget(self, run: _Run) -> None:
        anchor_id = run.entry.key[1] if isinstance(run.entry.key, tuple) else None
        if anchor_id is not None and self._runs.get(anchor_id) is run:
            del self._runs[anchor_id]
        runs = self._runs_by_invocation.get(run.invocation_id)
        if runs and run in runs:
            runs.remove(run)
            if not runs:
                del self._runs_by_invocation[run.invocation_id]
        if run.task is not None and run.on_task_done is not None:
            run.task.remove_done_callback(run.on_task_done)
            run.task = run.on_task_done = None

    # -- run hooks -------------------------------------------------------

    @_never_raises
    def before_run_callback(self, *, invocation_context: Any) -> None:
        _lead(self, invocation_context)
        if not self._looked_around:
            # At the first run every instrumentation the application set up is in place.
            self._looked_around = True
            coexistence.warn_about_others()
        run = self._open_run(invocation_context)
        if run.watch is not None:
            # Under instrument() the run executes in a private context (see
            # runner.py), so the invocation span can be current for the run's
            # callbacks without ever being current in the caller's context.
            self._ledger.attach(run.entry)
        root = getattr(invocation_context, "agent", None)
        if root is not None and self._propagating.get(id(root)) is not root:
            with contextlib.suppress(TypeError):  # an agent without weak references
                self._propagating[id(root)] = root
            a2a.propagate_from(attrs.remote_agents(root))
        if self._content is not None:
            self._capture(
                run.entry, sc.GEN_AI_INPUT_MESSAGES, attrs.user_messages, invocation_context
            )

    @_never_raises
    def after_run_callback(self, *, invocation_context: Any) -> None:
        run = self._runs.get(id(invocation_context))
        if run is None:
            return
        if not self._ledger.will_record(run.entry):
            # Sampled out, nothing under it recorded, no metrics: the outcome
            # would be written nowhere, so it is not worked out.
            self._close_run(run, Outcome.OK, None, None)
        elif run.closing_early:
            self._close_run(run, Outcome.INCOMPLETE, "consumer_closed", None)
        elif isinstance(sys.exc_info()[1], GeneratorExit):
            # ADK runs after_run in a `finally` also when its generator is being
            # closed ("treated as a clean completion"), with the GeneratorExit
            # in flight: not a success. Without the runner wrapper (App mode)
            # that is the consumer closing early; with it, code inside the run.
            reason = "generator_exit" if run.watch is not None else "consumer_closed"
            self._close_run(run, Outcome.INCOMPLETE, reason, None)
        elif getattr(invocation_context, "is_aborted", False):
            self._close_run(run, Outcome.CANCELLED, "aborted", None)
        elif _is_cancelled(run):
            # Some ADK releases (2.5) run after_run while the task is being
            # cancelled; an after hook means success only.
            self._close_run(run, Outcome.CANCELLED, "cancelled", None)
        else:
            self._close_run(run, Outcome.OK, None, None)

    @_never_raises
    def on_run_error_callback(self, *, invocation_context: Any, error: Exception) -> None:
        run = self._runs.get(id(invocation_context))
        if run is None:
            # Failed before our before_run (another plugin ahead of us raised):
            # still show the failed invocation.
            run = self._open_run(invocation_context)
        aborted = abort_reason(error)
        if aborted is not None:
            self._close_run(run, Outcome.CANCELLED, aborted, None)
        else:
            failure = self._classified(error, sc.SpanKind.INVOCATION, run)
            self._close_run(run, Outcome.ERROR, None, error, failure.attributes)

    # -- agent hooks -----------------------------------------------------

    @_never_raises
    def before_agent_callback(self, *, agent: Any, callback_context: Any) -> None:
        run = self._run_for(callback_context.invocation_id)
        if run is not None and run.transfers:
            self._end_transferred(run, agent.name)
        parent: Entry | None = None
        ancestor = getattr(agent, "parent_agent", None)
        while run is not None and ancestor is not None:
            parent = run.innermost_agent(ancestor.name)
            if parent is not None:
                break
            ancestor = getattr(ancestor, "parent_agent", None)
        if parent is None and run is not None:
            parent = run.entry
        ledger = self._ledger
        ledger.unwind()
        if parent is not None and parent.children:
            # A sibling agent (a loop's previous iteration) whose callbacks are done.
            ledger.settle_children(parent)
        entry = ledger.start(
            ("agent", next(self._keys)),
            f"invoke_agent {agent.name}",
            parent=parent,
            # A remote agent's span is the client side of a call to another service.
            kind=trace.SpanKind.CLIENT if attrs.is_remote_agent(agent) else trace.SpanKind.INTERNAL,
            attributes=(
                attrs.agent(agent, callback_context, getattr(ancestor, "name", None), self._latest)
                if ledger.will_record(parent)
                else attrs.AGENT_KIND_ONLY
            ),
        )
        # Current while the agent's own code runs (ADK runs this hook in the
        # agent's task and context), so library spans made in its body, such
        # as an A2A or HTTP client's, nest under it.
        ledger.attach(entry)
        if run is not None:
            run.agents.setdefault(agent.name, []).append(entry)
        else:
            self._orphans[(callback_context.invocation_id, agent.name)] = entry
        if self._content is not None:
            # The conventions' invoke_agent input: the message the run handles.
            self._capture(entry, sc.GEN_AI_INPUT_MESSAGES, attrs.user_messages, callback_context)

    @_never_raises
    def after_agent_callback(self, *, agent: Any, callback_context: Any) -> None:
        ledger = self._ledger
        ledger.unwind()
        entry, run = self._agent_entry(agent, callback_context)
        if entry is None:
            return
        if self._devui is not None:
            self._devui.release_under(entry)
        # Concluded, not ended: the agent's own after callback and later
        # plugins still see (and annotate) its span; see ledger.conclude.
        ledger.reattach(entry)
        self._conclude_agent(entry, run, callback_context)
        if run is None:
            ledger.settle(entry)  # no run in sight (plugin added mid-run): no later closer

    def _conclude_agent(self, entry: Entry, run: _Run | None, callback_context: Any) -> None:
        ledger = self._ledger
        if not ledger.will_record(entry):
            # Sampled out, nothing under it recorded, no metrics: no outcome to work out.
            ledger.conclude(entry, Outcome.OK)
            return
        # Some ADK releases (2.13) run after_agent from a `finally` while a
        # CancelledError the agent's code raised (a future cancelled under it)
        # is in flight: an abort, not a success, though the task is not cancelling.
        aborted = abort_reason(sys.exc_info()[1])
        if run is not None and run.closing_early:
            ledger.conclude(entry, Outcome.INCOMPLETE, None, "consumer_closed")
        elif _is_cancelled(run) or getattr(callback_context, "is_aborted", False):
            ledger.conclude(entry, Outcome.CANCELLED, None, "cancelled")
        elif aborted is not None:
            ledger.conclude(entry, Outcome.CANCELLED, None, aborted)
        elif entry.reported_cancel:
            ledger.conclude(entry, Outcome.CANCELLED, None, "remote_canceled")
        elif entry.reported_error is not None:
            reason, description = entry.reported_error
            failure = entry.reported_failure or failures.Failure(failures.Category.REMOTE_FAILED)
            ledger.conclude(entry, Outcome.ERROR, None, reason, description, failure.attributes)
        else:
            ledger.conclude(entry, Outcome.OK)

    def remote_response(self, invocation_context: Any, response: Any) -> None:
        """A response a remote agent received (``a2a.py``): its task's id and
        state go on the agent's span; a failed task makes the span an error."""
        run = self._run_for(getattr(invocation_context, "invocation_id", None))
        agent = getattr(invocation_context, "agent", None)
        entry = run.innermost_agent(getattr(agent, "name", None)) if run is not None else None
        if entry is None:
            return
        task_id, state, message = attrs.a2a_task(response)
        found = {sc.A2A_TASK_ID: task_id, sc.A2A_TASK_STATE: state}
        entry.span.set_attributes(
            sanitize.attributes({k: str(v) for k, v in found.items() if v}) or {}
        )
        if state in sc.A2A_FAILED_STATES:
            entry.reported_error = (sc.A2A_TASK_FAILED, f"remote task {state}: {message or ''}")
            entry.reported_failure = failures.Failure(failures.Category.REMOTE_FAILED)
        elif state == "canceled":
            entry.reported_cancel = True

    @_never_raises
    def on_agent_error_callback(
        self, *, agent: Any, callback_context: Any, error: Exception
    ) -> None:
        self._ledger.unwind()
        entry, run = self._agent_entry(agent, callback_context)
        if entry is not None:
            if self._devui is not None:
                self._devui.release_under(entry)
            self._end_failed(entry, error, callback_context.invocation_id, sc.SpanKind.AGENT)
            if run is None:
                self._ledger.settle(entry)

    def _agent_entry(self, agent: Any, callback_context: Any) -> tuple[Entry | None, _Run | None]:
        run = self._run_for(callback_context.invocation_id)
        if run is None:
            return self._orphans.pop((callback_context.invocation_id, agent.name), None), None
        entry = run.innermost_agent(agent.name)
        if entry is not None:
            run.agents[agent.name].pop()
        return entry, run

    # -- model hooks -----------------------------------------------------

    @_never_raises
    def before_model_callback(self, *, callback_context: Any, llm_request: Any) -> None:
        run = self._run_for(callback_context.invocation_id)
        # No agent span for the caller (a workflow node): the run is its parent.
        parent = (run.innermost_agent(callback_context.agent_name) or run.entry) if run else None
        if run is not None and run.live and parent is not None:
            # A live session calls before_model per user content and never
            # after_model: an event says it happened without a span that
            # could never end honestly.
            parent.span.add_event(
                LIVE_MODEL_REQUEST_EVENT,
                {sc.GEN_AI_REQUEST_MODEL: sanitize.clean(attrs.model_name(llm_request))},
            )
            return
        actions = callback_context.actions
        ledger = self._ledger
        ledger.unwind()
        entry = ledger.start(
            ("model", id(actions)),
            f"generate_content {attrs.model_name(llm_request)}",
            parent=parent,
            kind=trace.SpanKind.CLIENT,
            attributes=(
                attrs.model_request(callback_context, llm_request, self._latest)
                if ledger.will_record(parent)
                else attrs.MODEL_KIND_ONLY
            ),
            anchor=actions,
        )
        ledger.attach(entry)
        if self._devui is not None:
            self._devui.model_request(
                entry, callback_context.invocation_id, llm_request, self._content
            )
        if self._content is not None:
            event = sc.GEN_AI_INFERENCE_DETAILS_EVENT
            self._capture(
                entry, sc.GEN_AI_INPUT_MESSAGES, attrs.model_input_messages, llm_request, event
            )
            self._capture(
                entry,
                sc.GEN_AI_SYSTEM_INSTRUCTIONS,
                attrs.model_system_instructions,
                llm_request,
                event,
            )
            self._capture(
                entry, sc.GEN_AI_TOOL_DEFINITIONS, attrs.model_tool_definitions, llm_request, event
            )

    @_never_raises
    def after_model_callback(self, *, callback_context: Any, llm_response: Any) -> None:
        entry = self._ledger.get(("model", id(callback_context.actions)))
        if entry is None:
            return
        # Current again for the after_model callbacks that run after this one
        # (ADK restores its own context around each response, chunks included).
        self._ledger.reattach(entry)
        if entry.pending is not None:
            return  # already concluded: an error a callback recovered from
        if getattr(llm_response, "partial", False):
            entry.updates += 1
            entry.span.set_attribute(ADK_MODEL_CHUNKS, entry.updates)
            self._ledger.chunk(entry)
            return
        if not entry.updates:
            self._ledger.chunk(entry, final=True)
        ledger = self._ledger
        response: Mapping[str, AttributeValue] | None = None
        if entry.recording or ledger.will_record(entry.parent):
            # Written with the outcome when the span ends, in one call.
            response = sanitize.attributes(attrs.model_response(llm_response, self._latest)) or {}
            ledger.responded(entry, response)
        if self._content is not None:
            self._capture(
                entry,
                sc.GEN_AI_OUTPUT_MESSAGES,
                attrs.model_output_messages,
                llm_response,
                sc.GEN_AI_INFERENCE_DETAILS_EVENT,
            )
        # Concluded, not ended: the response event settles it.
        error_code = getattr(llm_response, "error_code", None)
        if error_code:
            blocked = failures.classify_response_error(error_code).attributes
            extra = {**response, **blocked} if response else blocked
            ledger.conclude(entry, Outcome.ERROR, None, str(error_code), extra=extra)
        else:
            ledger.conclude(entry, Outcome.OK, extra=response)
        if self._devui is not None:
            # Under the dev server it also waits for the event id the UI joins on.
            self._devui.hold_model(
                entry,
                callback_context.invocation_id,
                callback_context.agent_name,
                llm_response,
                self._content,
                functools.partial(ledger.settle, entry),
            )

    @_never_raises
    def on_model_error_callback(
        self, *, callback_context: Any, llm_request: Any, error: Exception
    ) -> None:
        entry = self._ledger.get(("model", id(callback_context.actions)))
        if entry is not None:
            self._end_failed(entry, error, callback_context.invocation_id, sc.SpanKind.MODEL)

    # -- tool hooks ------------------------------------------------------

    @_never_raises
    def before_tool_callback(self, *, tool: Any, tool_args: Any, tool_context: Any) -> None:
        run = self._run_for(tool_context.invocation_id)
        # A workflow tool node has no agent span: the run is its parent.
        parent = (run.innermost_agent(tool_context.agent_name) or run.entry) if run else None
        ledger = self._ledger
        ledger.unwind()
        entry = ledger.start(
            ("tool", tool_context.invocation_id, tool_context.function_call_id),
            f"execute_tool {tool.name}",
            parent=parent,
            attributes=(
                attrs.tool(tool, tool_context)
                if ledger.will_record(parent)
                else attrs.TOOL_KIND_ONLY
            ),
        )
        ledger.attach(entry)
        if self._content is not None:
            self._capture(entry, sc.GEN_AI_TOOL_CALL_ARGUMENTS, _same, tool_args)

    @_never_raises
    def after_tool_callback(
        self, *, tool: Any, tool_args: Any, tool_context: Any, result: Any
    ) -> None:
        key = ("tool", tool_context.invocation_id, tool_context.function_call_id)
        entry = self._ledger.get(key)
        if entry is None:
            return
        self._ledger.reattach(entry)  # see after_model_callback
        if entry.pending is not None:
            return  # already concluded: an error a callback recovered from
        if self._content is not None:
            self._capture(entry, sc.GEN_AI_TOOL_CALL_RESULT, _same, result)
        if tool.name == _TRANSFER:
            self._note_transfer(tool_context, tool_args)
        # Concluded, not ended: the function response event settles it.
        failure = failures.tool_result_failure(
            tool, result, self._classifier, self._result_failures
        )
        if failure is not None:
            # A failure reported as a result (ADK's error shape, its argument
            # checks, MCP isError): an error here, the agent carries on.
            description = failure.message or failure.category
            self._conclude_tool(
                entry, Outcome.ERROR, sc.MCP_TOOL_ERROR, description, extra=failure.attributes
            )
        else:
            self._conclude_tool(entry, Outcome.OK)
        if self._devui is not None:
            # Under the dev server it also waits for the event id the UI joins on.
            settle = functools.partial(self._ledger.settle, entry)
            self._devui.hold_tool(
                entry, tool_context.invocation_id, tool_context.function_call_id, settle
            )

    def _conclude_tool(
        self,
        entry: Entry,
        outcome: Outcome,
        reason: str | None = None,
        description: str | None = None,
        error: BaseException | None = None,
        extra: Mapping[str, AttributeValue] | None = None,
    ) -> None:
        """Conclude a tool span. Some ADK releases (2.5) write their own tool
        telemetry to the current span after the tool's last callback, which
        is adk-otel's span now: at the end adk-otel's start attributes are
        written again and ADK's ``gcp.vertex.agent.*`` ones (content among
        them) dropped."""
        self._ledger.conclude(
            entry, outcome, error, reason, description, extra, foreign=_ADK_LEGACY
        )

    @_never_raises
    def on_tool_error_callback(
        self, *, tool: Any, tool_args: Any, tool_context: Any, error: Exception
    ) -> None:
        entry = self._ledger.get(
            ("tool", tool_context.invocation_id, tool_context.function_call_id)
        )
        if entry is not None and entry.pending is None:
            self._end_failed(
                entry, error, tool_context.invocation_id, sc.SpanKind.TOOL, _ADK_LEGACY
            )

    # -- content capture (off by default; see content.py) ---------------

    async def on_event_callback(self, *, invocation_context: Any, event: Any) -> None:
        # Called for every event: with capture off, no dev UI, no error and
        # nothing concluded, next to nothing.
        if self._devui is not None:
            await self._dev_ui_event(event=event)
        try:
            failed = event.error_message is not None
        except AttributeError:  # not an ADK Event: nothing to read
            failed = False
        if failed:
            await self._event_error(invocation_context=invocation_context, event=event)
        ledger = self._ledger_instance
        if ledger is not None and ledger.concluded:
            self._settle_for(ledger, event)
        if self._content is not None:
            await self._capture_final_response(invocation_context=invocation_context, event=event)
        return None

    def _settle_for(self, ledger: TelemetryLedger, event: Any) -> None:
        """End the model or tool spans whose response this event carries: every
        callback of their layer has run by the time ADK emits it."""
        try:
            if not event.partial:
                model = ledger.get(("model", id(event.actions)))
                if model is not None:
                    ledger.settle(model)
            if ledger.concluded:
                for call_id in attrs.function_response_ids(event):
                    tool = ledger.get(("tool", event.invocation_id, call_id))
                    if tool is not None:
                        ledger.settle(tool)
        except Exception:
            self._hook_failures += 1
            logger.debug("adk-otel: settling spans failed", exc_info=True)

    @_never_raises
    def _dev_ui_event(self, *, event: Any) -> None:
        if self._devui is not None:
            self._devui.on_event(event)

    @_never_raises
    def _event_error(self, *, invocation_context: Any, event: Any) -> None:
        """A remote agent that reports a failure as an event (ADK yields one
        with ``error_message`` when an A2A request fails or breaks off)."""
        author = getattr(event, "author", None)
        agent = getattr(invocation_context, "agent", None)
        if getattr(agent, "name", None) != author:
            find = getattr(agent, "find_agent", None)
            agent = find(author) if callable(find) and isinstance(author, str) else None
        if not attrs.is_remote_agent(agent):
            return
        run = self._run_for(getattr(invocation_context, "invocation_id", None))
        entry = run.innermost_agent(author) if run is not None else None
        if entry is None or entry.reported_error is not None:
            return
        failure = failures.classify_remote_event(
            event.error_message, getattr(event, "custom_metadata", None)
        )
        reason = sc.A2A_TASK_FAILED if failure.category == "remote_failed" else _A2A_REQUEST_FAILED
        entry.reported_failure = failure
        entry.reported_error = (reason, failure.message)

    def _note_transfer(self, tool_context: Any, tool_args: Any) -> None:
        """``transfer_to_agent``: ADK ends the calling agent's turn without an
        after_agent hook; its span ends OK when the target starts."""
        run = self._run_for(tool_context.invocation_id)
        source = run.innermost_agent(tool_context.agent_name) if run is not None else None
        target = tool_args.get("agent_name") if isinstance(tool_args, dict) else None
        if run is None or source is None or not isinstance(target, str):
            return
        if run.transfers is None:
            run.transfers = {}
        run.transfers.setdefault(target, []).append(source)

    def _end_transferred(self, run: _Run, target: str) -> None:
        assert run.transfers is not None
        for source in run.transfers.pop(target, ()):
            if not source.ended:
                self._ledger.end_entry(
                    source,
                    Outcome.OK,
                    None,
                    sc.CLOSE_REASON_TRANSFERRED,
                    extra={sc.ADK_TRANSFER_TARGET: sanitize.clean(target)},
                )

    @_never_raises
    def _capture_final_response(self, *, invocation_context: Any, event: Any) -> None:
        run = self._runs.get(id(invocation_context))
        if run is not None and not run.entry.ended:
            self._capture(run.entry, sc.GEN_AI_OUTPUT_MESSAGES, attrs.final_output_messages, event)
        # ...and the final response of the agent that wrote it, on that agent's span.
        agent = run.innermost_agent(getattr(event, "author", None)) if run is not None else None
        if agent is not None:
            self._capture(agent, sc.GEN_AI_OUTPUT_MESSAGES, attrs.final_output_messages, event)
        log = self._ledger.details
        if log is not None and not getattr(event, "partial", False):
            calls = attrs.function_call_ids(event)
            if calls:
                log.link(
                    getattr(event, "invocation_id", None), getattr(event, "author", None), calls
                )

    def _capture(
        self,
        entry: Entry,
        key: str,
        build: Callable[[Any], Any],
        source: Any,
        event: str = sc.ADK_CONTENT_EVENT,
    ) -> None:
        """Record ``build(source)`` as ``key``; built only for a recorded span."""
        capture = self._content
        if capture is None or not entry.span.is_recording():
            return
        try:
            capture.record(self._ledger, entry, key, build(source), event)
        except Exception:
            logger.debug("adk-otel: content capture failed for %s", key, exc_info=True)

    # -- shared ----------------------------------------------------------

    def _end_failed(
        self,
        entry: Entry,
        error: BaseException,
        invocation_id: str,
        layer: str,
        foreign: str | None = None,
    ) -> None:
        """Conclude a failed layer; it ends after the layer's other error
        callbacks. ``foreign``: see :meth:`Ledger.conclude`."""
        if entry.pending is None:
            self._ledger.reattach(entry)
        aborted = abort_reason(error)
        run = self._run_for(invocation_id) if aborted is None else None
        if aborted is not None:
            self._ledger.conclude(entry, Outcome.CANCELLED, None, aborted, foreign=foreign)
        elif _is_cancelled(run):
            self._ledger.conclude(entry, Outcome.CANCELLED, None, "cancelled", foreign=foreign)
        else:
            failure = self._classified(error, layer, run)
            self._ledger.conclude(
                entry, Outcome.ERROR, error, extra=failure.attributes, foreign=foreign
            )

    def _classified(self, error: BaseException, layer: str, run: _Run | None) -> Failure:
        """As first classified in this run: every layer shows the category of
        the layer the exception came from."""
        if run is None:
            return failures.classify(error, layer, None, self._classifier)
        if run.failures is None:
            run.failures = {}
        return failures.classify(error, layer, run.failures, self._classifier)

    async def close(self) -> None:
        """End anything still open, then flush the tracer provider, bounded, and
        report (``shutdown.py``). ``Runner.close()`` calls this, and ADK's
        servers close every runner when the app shuts down: the last moment
        before a server process dies by SIGTERM, with no ``atexit``."""
        ledger = self._ledger_instance
        started = time.monotonic()
        await self._let_cancelled_runs_end()
        cut_off = len(ledger) if ledger is not None else 0
        self.end_open_spans()
        if ledger is None:
            return
        provider = self._settings.tracer_provider or trace.get_tracer_provider()
        spent = time.monotonic() - started
        await asyncio.to_thread(shutdown.flush_and_report, provider, ledger.ended, cut_off, spent)

    async def _let_cancelled_runs_end(self) -> None:
        """A server stopping with runs in flight cancels their tasks just before
        it closes the runners (uvicorn's ``--timeout-graceful-shutdown``): let
        them unwind first, for a bounded time, so each run ends ``cancelled``
        through its own hooks and the spans around it (the HTTP server span)
        end before the flush, rather than being cut off as ``incomplete``."""
        try:
            await asyncio.sleep(0)  # one turn: cancellation reaches the runs' tasks
            current = asyncio.current_task()
            unwinding = {
                run.task
                for run in self._runs.values()
                if run.task is not None
                and run.task is not current
                and not run.task.done()
                and run.task.cancelling() > run.cancelling_at_start
            }
            if unwinding:
                await asyncio.wait(unwinding, timeout=shutdown.UNWIND_LIMIT)
                await asyncio.sleep(0)  # and the tasks that awaited them
        except (RuntimeError, ValueError):
            pass

    def end_open_spans(self, reason: str = "plugin_closed") -> None:
        """End every span still open as ``incomplete`` (``adk.close_reason``
        ``reason``): the plugin is closing or being removed, or the process is
        exiting, so no hook will end them. Never raises."""
        try:
            if self._devui is not None:
                self._devui.release_under(None)
            if self._ledger_instance is not None:
                self._ledger_instance.end_all(Outcome.INCOMPLETE, reason)
                if self._ledger_instance.details is not None:
                    self._ledger_instance.details.flush()
            for run in list(self._runs.values()):
                self._forget(run)
            self._orphans.clear()
        except Exception:
            logger.warning("adk-otel: ending open spans failed", exc_info=True)


_ADK_LEGACY = f"{sc.ADK_SCOPE}."
"""Prefix of the attributes ADK's own tool telemetry writes (``gcp.vertex.agent.``)."""

_LIVE: weakref.WeakSet[AdkOtelPlugin] = weakref.WeakSet()
_exit_hook_registered = False


def _end_at_exit(plugin: AdkOtelPlugin) -> None:
    """At interpreter exit, end what is still open (runs whose event loop was
    closed or abandoned mid-run) as ``incomplete`` (``process_exit``), so the
    spans reach the exporter. Registered after the tracer provider exists, so
    it runs before the provider's own exit handler flushes and shuts down."""
    global _exit_hook_registered
    _LIVE.add(plugin)
    if not _exit_hook_registered:
        _exit_hook_registered = True
        atexit.register(_end_all_open_spans)


def _end_all_open_spans() -> None:
    for plugin in list(_LIVE):
        plugin.end_open_spans("process_exit")


_TRANSFER = "transfer_to_agent"
_A2A_REQUEST_FAILED = "a2a_request_failed"


def _lead(plugin: AdkOtelPlugin, invocation_context: Any) -> None:
    """Put ``plugin`` first in the run's plugin list, as ``instrument()``
    does, when it was registered later (``--extra_plugins`` appends it): every
    other plugin's callbacks then see the span of their layer. Done while ADK
    iterates the list for before_run: moving the current item to the front
    leaves the items after it where they were, so none is skipped or repeated."""
    plugins = invocation_context.plugin_manager.plugins  # public on ADK 2.5 through 2.13
    if plugins.__class__ is list and plugins and plugins[0] is not plugin and plugin in plugins:
        plugins.remove(plugin)
        plugins.insert(0, plugin)


def _same(value: Any) -> Any:
    return value


def _given(value: Any, current: Any) -> Any:
    return current if value is None else value
