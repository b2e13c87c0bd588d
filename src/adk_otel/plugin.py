"""``AdkOtelPlugin``: ADK plugin hooks -> span ledger calls.

Each hook is a few lines: find the run, open, conclude or settle a span.
Hooks never raise into ADK (a failure is counted, logged once per hook and
swallowed, see lifecycle/hook_guard.py) and always return ``None``, so the plugin can
never short-circuit or alter an agent run. What the hooks call lives in
lifecycle/, a module each: runs.py (the runs in flight), opening.py (how a
span opens), outcomes.py (how it ends), capture.py (content capture),
remote.py (A2A remote agents), transfers.py (``transfer_to_agent``),
options.py (the options resolved) and teardown.py (``close()`` and
interpreter exit).

A "before" hook and its terminal hook find the same span by a pairing key
(lifecycle/keys.py); an agent run by agent name within its run (a stack, for
loop iterations and retries).
"""

from __future__ import annotations

import functools
import importlib
import logging
import sys
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Unpack

from google.adk.plugins.base_plugin import BasePlugin
from opentelemetry import trace
from opentelemetry.util.types import AttributeValue

from . import semconv as sc
from . import settings
from .integrations import coexistence, eval_runs
from .integrations.devui import DevUi
from .ledger.telemetry import TelemetryLedger
from .lifecycle import (
    capture,
    keys,
    nodes,
    opening,
    options,
    outcomes,
    remote,
    runs,
    sharing,
    teardown,
    transfers,
    travel,
)
from .lifecycle.aborts import abort_reason
from .lifecycle.hook_guard import HookGuard
from .lifecycle.runner import CURRENT_WATCH
from .pipeline import held_tracer, processor_swap, provider, shutdown
from .reading import attributes as attrs
from .reading.content import ContentCapture
from .reading.user_id import UserIdMode
from .semconv import ADK_MODEL_CHUNKS, GEN_AI_REQUEST_STREAM, Outcome
from .util import sanitize
from .util.redact import guarded

if sys.version_info >= (3, 12):
    from typing import override
else:  # typing_extensions comes with opentelemetry-api and google-adk
    from typing_extensions import override

if TYPE_CHECKING:
    from google.adk.agents.base_agent import BaseAgent
    from google.adk.agents.callback_context import CallbackContext
    from google.adk.agents.invocation_context import InvocationContext
    from google.adk.events.event import Event
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.adk.tools.base_tool import BaseTool
    from google.adk.tools.tool_context import ToolContext
    from google.genai import types

logger: logging.Logger = guarded(logging.getLogger(__name__))


class AdkOtelPlugin(BasePlugin):
    """Traces ADK runs: invocation, agent, model-call and tool-call spans.

    Usable on its own (``App(plugins=[AdkOtelPlugin()])`` or
    ``adk web --extra_plugins adk_otel.AdkOtelPlugin``); ``adk_otel.instrument``
    adds it for you and also wraps a Runner's generators so cancellation and
    early close end every span.
    """

    receives_a2a_responses = True
    """Remote agents' responses reach :meth:`remote_response` (see integrations/a2a.py)."""

    def __init__(self, name: str = "adk_otel", **given: Unpack[options.OptionArguments]) -> None:
        super().__init__(name=name)
        self._take(options.Options().updated(given))
        self._guard = HookGuard()
        self._looked_around = False
        self._told_no_nodes = False
        # Resolved with the ledger (options.Resolved says what each is).
        self._content: ContentCapture | None = None
        self._capture: capture.Capture | None = None
        """Set while content capture is on; None skips all content work."""
        self._user_id = UserIdMode.PLAIN
        self._latest = False
        self._ledger_instance: TelemetryLedger | None = None
        self._devui: DevUi | None = None
        """Set when ADK's dev server reads this plugin's spans (see integrations/devui.py)."""
        self._processors: processor_swap.ProcessorWatch | None = None
        """Follows a span processor a platform swaps under the tracer (Agent Engine)."""
        self._runs = runs.Runs()
        self._sharing = sharing.Sharing(self)
        self._agent_keys = keys.agents()
        # Root agents whose remote agents already carry the trace (lifecycle/remote.py).
        self._propagating: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()
        self._last_root: weakref.ref[Any] | None = None
        self._answer_for_adk()
        if self._options[settings.TRACER_PROVIDER] is not None or not isinstance(
            trace.get_tracer_provider(), trace.ProxyTracerProvider
        ):
            # A provider is known now: resolve at once, so ADK's spans are
            # switched off before the first run starts one.
            self.prepare()

    # -- configuration ---------------------------------------------------

    def configure(self, **given: Unpack[options.OptionArguments]) -> None:
        """Change the options passed (``None`` keeps an option as it is). Spans
        already open stay in the same bookkeeping and are ended by their own
        hooks, whatever provider later spans go to."""
        self._take(self._options.updated(given))
        ledger = self._ledger_instance
        if ledger is None:
            self.prepare()
            return
        self._resolve(ledger)

    def _take(self, chosen: options.Options) -> None:
        """Keep the options; the ones the hooks read each time are kept apart."""
        self._options = chosen
        self._telemetry = chosen.telemetry
        self._classifier = chosen[settings.ERROR_CLASSIFIER]
        self._result_failures = settings.load(
            settings.RESULT_FAILURES, chosen[settings.RESULT_FAILURES]
        )

    def prepare(self) -> None:
        """Resolve the tracer provider now (``instrument()`` calls this)."""
        _ = self._ledger

    def _answer_for_adk(self) -> None:
        """Before any run: another ADK instrumentation stood down, and the
        tracer ADK holds answered for (``pipeline/held_tracer.py``), so even
        the first run's workflow nodes open in this plugin's tree, whoever set
        the tracer provider up before ADK was imported. Never raises."""
        try:
            coexistence.stand_down_others()
            # ADK takes its tracer when its telemetry module is first imported. A
            # plain agent's imports leave that to the Runner, which Agent Engine's
            # set_up() builds after it set its provider: the first run would open
            # ADK's run span on a tracer answered for only in that run's hooks.
            # Taken now, the tracer ADK will hold is answered for before any run.
            importlib.import_module(held_tracer.ADK_TRACING_MODULE)
            provider.answer_adk_tracer(keep=provider.keep_adk_spans(self._telemetry.keep_adk_spans))
        except Exception:
            self._guard.failed("_answer_for_adk")

    @functools.cached_property
    def _ledger(self) -> TelemetryLedger:
        # Resolved on first use, so a plugin built at import time still picks
        # up a provider (and content settings) the application configures later;
        # cached, so the hooks read it as a plain attribute (the ledger object
        # stays the same for the plugin's life: configure() retargets it).
        ledger = self._ledger_instance
        if ledger is None:
            ledger = self._resolve(None)
            teardown.end_at_exit(self)
            shutdown.announce(options.provider(self._options.telemetry))
        return ledger

    def _resolve(self, ledger: TelemetryLedger | None) -> TelemetryLedger:
        """Resolve the options into ``ledger`` (a new one when None) and the
        values the hooks read: content capture, the dev UI, the details log."""
        now = options.resolve(self._options)
        self._content, self._user_id, self._latest = now.content, now.user_id, now.latest
        if ledger is None:
            ledger = self._ledger_instance = TelemetryLedger(now.tracer, now.instruments)
        else:
            ledger.retarget(now.tracer, now.instruments)
        self._capture = capture.for_content(now.content, ledger)
        if ledger.details is not None:
            ledger.details.flush()
        telemetry = self._options.telemetry
        self._processors = processor_swap.ProcessorWatch(now.tracer, options.provider(telemetry))
        ledger.watch_inferences(options.provider(telemetry))
        ledger.details = options.details_log(now.content, telemetry)
        self._devui = options.dev_ui(telemetry, self._devui)
        return ledger

    def note_root(self, app_name: Any, root: Any) -> None:
        """The root node of an app this plugin traces (``instrument()`` passes
        a Runner's or an App's): a ``Workflow`` root makes its runs
        ``invoke_workflow``. Only the name is kept."""
        self._runs.note_workflow(app_name, attrs.workflow_name(root), nodes.node_kinds(root))

    @property
    def internal_errors(self) -> int:
        """Failures inside adk-otel since this plugin was made (a hook that
        raised, a span whose outcome could not be recorded): each is logged
        once per kind and counted here; no span is left open by one."""
        ledger = self._ledger_instance
        return self._guard.failures + (ledger.failures if ledger is not None else 0)

    @property
    def open_spans(self) -> int:
        """How many spans this plugin has open right now."""
        return len(self._ledger_instance) if self._ledger_instance else 0

    # -- run hooks -------------------------------------------------------

    @override
    async def on_user_message_callback(
        self, *, invocation_context: InvocationContext, user_message: types.Content
    ) -> None:
        # The run opens as ADK takes its message, before before_run: the
        # runner's own work in between (the message's session write) is the
        # run's too, as under ADK's own run span.
        try:
            self._open_run(invocation_context)  # ADK calls it once per run, never live
        except Exception:
            self._guard.failed("on_user_message_callback")

    @override
    async def before_run_callback(self, *, invocation_context: InvocationContext) -> None:
        try:
            try:
                run: runs.Run | None = self._runs.by_context[id(invocation_context)]
            except KeyError:
                run = None  # no user message (a resumed run): the run opens here
            if run is not None and run.began:
                return  # called again: the close witness just went in front (sharing.py)
            first = runs.put_first(self, invocation_context)
            if run is None:
                run = self._open_run(invocation_context)
            elif run.invocation_id != invocation_context.invocation_id:
                self._runs.refile(run, invocation_context)
            run.began = True
            ledger = self._ledger
            root = getattr(invocation_context, "agent", None)
            adk_root = run.adk_root
            run.manager = self._sharing.enlist(invocation_context, first)
            eval_runs.label(run.entry.span, invocation_context, self._telemetry)
            if root is None:
                # A Workflow root (ADK gives its runs no agent): its nodes get spans.
                if adk_root is not None or run.live:
                    # (A live run opens its root workflow after this hook.)
                    self._claim_nodes(adk_root or trace.get_current_span(), run, invocation_context)
                elif not self._told_no_nodes:
                    self._told_no_nodes = True  # ADK's tracer is not one adk-otel answers for
                    logger.warning(nodes.UNROUTED)
            if root is not None and self._unpropagated(root):
                remote.propagate_from(self._propagating, root)
            if self._capture is not None:
                self._capture.put(
                    run.entry, sc.GEN_AI_INPUT_MESSAGES, attrs.user_messages, invocation_context
                )
                self._capture.put(
                    run.entry, sc.ADK_SESSION_STATE, attrs.session_state, invocation_context
                )
            elif self._devui is None and not run.entry.recording:
                # Sampled out with nothing to record: the run's other hooks return at once.
                run.quiet = runs.is_quiet(run, ledger)
        except Exception:
            self._guard.failed("before_run_callback")

    def _open_run(self, invocation_context: Any) -> runs.Run:
        """Open the run's invocation span at its first hook, and make it the
        parent of whatever starts under ADK's run span from then on."""
        if not self._looked_around:
            # At the first run every instrumentation the application set up is in place.
            self._looked_around = True
            self._answer_for_adk()
        ledger = self._ledger
        if self._processors is not None:
            self._processors.check()
        # ADK's run span, as adk-otel answered it: claimed, so what ADK
        # opens under it joins this run (a run nobody claims keeps ADK's spans).
        current = trace.get_current_span()
        adk_root = current if type(current) is nodes.RunRoot else nodes.run_root(current)
        if adk_root is not None:
            adk_root.claimed = True
        run = self._runs.open(
            ledger, invocation_context, self._user_id, self._close_run, adk_root, current=True
        )
        if adk_root is not None:
            # What starts under ADK's run span from now on is the run's.
            run.adk_root, adk_root.run_span = adk_root, run.entry.span
        return run

    def _unpropagated(self, root: Any) -> bool:
        """Whether ``root``'s remote agents do not carry the trace yet (the
        root of the previous run, the usual case, is known without a look-up)."""
        last = self._last_root
        if last is not None and last() is root:
            return False
        try:
            self._last_root = weakref.ref(root)
        except TypeError:
            self._last_root = None
        return self._propagating.get(id(root)) is not root

    def _claim_nodes(
        self, adk_run_span: trace.Span, run: runs.Run, invocation_context: Any
    ) -> None:
        """The run's workflow nodes open under its invocation span (lifecycle/nodes.py)."""
        app = getattr(invocation_context, "app_name", None) or ""
        classifier = self._classifier

        def classify(error: BaseException) -> Mapping[str, AttributeValue]:
            return outcomes.classified(error, sc.SpanKind.NODE, run, classifier).attributes

        run.nodes = nodes.NodeScope(
            self._ledger,
            run.entry,
            path=nodes.root_path(adk_run_span, self._runs.workflows.get(app)),
            kinds=self._runs.kinds.get(app) or {},
            classify=classify,
        )
        nodes.claim_root(adk_run_span, run.nodes)

    @override
    async def after_run_callback(self, *, invocation_context: InvocationContext) -> None:
        try:
            run = self._runs.by_context.get(id(invocation_context))
            if run is not None:
                outcome, reason = outcomes.of_run(self._ledger, run, invocation_context)
                if outcome is Outcome.OK and run.waiting:
                    # Stopped to wait for input: the run that resumes it links here.
                    self._runs.paused(run)
                    extra = {sc.ADK_INTERRUPT_IDS: list(run.waiting)}
                    self._close_run(run, Outcome.PAUSED, extra=extra)
                else:
                    self._close_run(run, outcome, reason=reason)
        except Exception:
            self._guard.failed("after_run_callback")

    @override
    async def on_run_error_callback(
        self, *, invocation_context: InvocationContext, error: Exception
    ) -> None:
        try:
            run = self._runs.by_context.get(id(invocation_context))
            if run is None:
                # Failed before our before_run (another plugin ahead of us raised):
                # still show the failed invocation.
                run = self._runs.open(
                    self._ledger, invocation_context, self._user_id, self._close_run
                )
            aborted = abort_reason(error)
            if aborted is not None:
                self._close_run(run, Outcome.CANCELLED, reason=aborted)
            else:
                failure = outcomes.classified(error, sc.SpanKind.INVOCATION, run, self._classifier)
                self._close_run(run, Outcome.ERROR, error=error, extra=failure.attributes)
        except Exception:
            self._guard.failed("on_run_error_callback")

    def _close_run(
        self,
        run: runs.Run,
        outcome: Outcome,
        *,
        reason: str | None = None,
        error: BaseException | None = None,
        extra: Mapping[str, AttributeValue] | None = None,
    ) -> None:
        if self._devui is not None:
            self._devui.release_under(run.entry)
        if run.watch is not None and not run.watch.finished:
            # The run's own callbacks after ours still see its span; the
            # wrapper ends it when ADK's generator is done (close_remaining).
            self._ledger.conclude(run.entry, outcome, error=error, reason=reason, extra=extra)
            return
        if not run.entry.ended:
            self._ledger.end_entry(run.entry, outcome, error=error, reason=reason, extra=extra)
        self._runs.forget(run)

    # -- agent hooks -----------------------------------------------------

    @override
    async def before_agent_callback(
        self, *, agent: BaseAgent, callback_context: CallbackContext
    ) -> None:
        try:
            run = self._runs.latest(callback_context.invocation_id)
            if run is not None and run.quiet:
                return
            ledger = self._ledger
            if run is not None and run.transfers:
                transfers.end_transferred(ledger, run, agent.name)
            key = next(self._agent_keys)
            entry = opening.open_agent(ledger, run, key, agent, callback_context, self._latest)
            if run is not None:
                run.agents.setdefault(agent.name, []).append(entry)
            else:
                self._runs.orphans[keys.orphan(callback_context.invocation_id, agent.name)] = entry
                watch = CURRENT_WATCH.get()
                if watch is not None:
                    # No run hooks (ADK 2.5's live workflow): the wrapped call's end ends it.
                    watch.closers.append(functools.partial(self._end_orphan, entry))
            if self._capture is not None:
                # The conventions' invoke_agent input: the message the run handles.
                self._capture.put(
                    entry, sc.GEN_AI_INPUT_MESSAGES, attrs.user_messages, callback_context
                )
        except Exception:
            self._guard.failed("before_agent_callback")

    def _end_orphan(
        self, entry: Any, outcome: Outcome, *, reason: str, error: BaseException | None
    ) -> None:
        if not entry.ended:
            self._ledger.end_entry(entry, outcome, error=error, reason=reason)

    @override
    async def after_agent_callback(
        self, *, agent: BaseAgent, callback_context: CallbackContext
    ) -> None:
        try:
            entry, run = self._runs.pop_agent(callback_context.invocation_id, agent.name)
            if entry is None and run is not None and run.quiet:
                return
            ledger = self._ledger
            ledger.unwind()
            if entry is None:
                return
            if self._devui is not None:
                self._devui.release_under(entry)
            # Concluded, not ended: the agent's own after callback and later
            # plugins still see (and annotate) its span; see ledger.conclude.
            ledger.reattach(entry)
            outcomes.conclude_agent(ledger, entry, run, callback_context)
            if run is None:
                ledger.settle(entry)  # no run in sight (plugin added mid-run): no later closer
        except Exception:
            self._guard.failed("after_agent_callback")

    @override
    async def on_agent_error_callback(
        self, *, agent: BaseAgent, callback_context: CallbackContext, error: Exception
    ) -> None:
        try:
            entry, run = self._runs.pop_agent(callback_context.invocation_id, agent.name)
            if entry is None and run is not None and run.quiet:
                return
            ledger = self._ledger
            ledger.unwind()
            if entry is not None:
                if self._devui is not None:
                    self._devui.release_under(entry)
                outcomes.end_failed(
                    ledger,
                    entry,
                    error,
                    run=run,
                    layer=sc.SpanKind.AGENT,
                    classifier=self._classifier,
                )
                if run is None:
                    ledger.settle(entry)
        except Exception:
            self._guard.failed("on_agent_error_callback")

    def remote_response(self, invocation_context: Any, response: Any) -> None:
        """A response a remote agent received (``integrations/a2a.py``): its task's id and
        state go on the agent's span; a failed task makes the span an error."""
        remote.record_response(self._runs, invocation_context, response)

    # -- model hooks -----------------------------------------------------

    @override
    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> None:
        try:
            run = self._runs.latest(callback_context.invocation_id)
            if run is not None and run.quiet:
                return
            # No agent span for the caller (a workflow node): the run is its parent.
            parent = (
                (run.innermost_agent(callback_context.agent_name) or run.entry)
                if run
                else self._runs.orphans.get(
                    keys.orphan(callback_context.invocation_id, callback_context.agent_name)
                )
            )
            if (
                run is not None
                and run.live
                and parent is not None
                and sc.GEN_AI_WORKFLOW_NAME not in (run.entry.opened_with or ())
            ):
                # A live session's per-content call (never an after_model). A
                # workflow's agent nodes call their model as usual, live or not.
                opening.live_model_request(parent, llm_request)
                return
            entry = opening.open_model(
                self._ledger, parent, run, callback_context, llm_request, self._latest
            )
            if self._devui is not None:
                self._devui.model_request(
                    entry, callback_context.invocation_id, llm_request, self._content
                )
            if self._capture is not None:
                self._capture.model_request(entry, llm_request)
        except Exception:
            self._guard.failed("before_model_callback")

    @override
    async def after_model_callback(
        self, *, callback_context: CallbackContext, llm_response: LlmResponse
    ) -> None:
        try:
            ledger = self._ledger
            entry = ledger.get(keys.model(callback_context.actions))
            if entry is None:
                return
            # Current again for the after_model callbacks that run after this one
            # (ADK restores its own context around each response, chunks included).
            ledger.reattach(entry)
            if entry.pending is not None:
                return  # already concluded: an error a callback recovered from
            if getattr(llm_response, "partial", False):
                entry.updates += 1
                entry.span.set_attribute(ADK_MODEL_CHUNKS, entry.updates)
                ledger.chunk(entry)
                return
            if (
                not entry.updates
                and entry.opened_with
                and GEN_AI_REQUEST_STREAM in entry.opened_with
            ):
                ledger.chunk(entry, final=True)  # a streamed call that sent no partial chunk
            response: Mapping[str, AttributeValue] | None = None
            if entry.recording or ledger.will_record(entry.parent):
                # Written with the outcome when the span ends, in one call.
                response = ledger.responded(
                    entry,
                    sanitize.attributes(attrs.model_response(llm_response, self._latest)) or {},
                )
            if self._capture is not None:
                self._capture.model_response(entry, llm_response)
            # Concluded, not ended: the response event settles it.
            outcomes.conclude_model(ledger, entry, llm_response, response)
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
        except Exception:
            self._guard.failed("after_model_callback")

    @override
    async def on_model_error_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest, error: Exception
    ) -> None:
        try:
            ledger = self._ledger
            entry = ledger.get(keys.model(callback_context.actions))
            if entry is not None:
                run = self._runs.latest(callback_context.invocation_id)
                outcomes.end_failed(
                    ledger,
                    entry,
                    error,
                    run=run,
                    layer=sc.SpanKind.MODEL,
                    classifier=self._classifier,
                )
        except Exception:
            self._guard.failed("on_model_error_callback")

    # -- tool hooks ------------------------------------------------------

    @override
    async def before_tool_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext
    ) -> None:
        try:
            run = self._runs.latest(tool_context.invocation_id)
            if run is not None and run.quiet:
                return
            node = (
                nodes.enclosing(trace.get_current_span())
                if run is not None and run.nodes is not None
                else None
            )
            if node is not None:
                # A workflow tool node: its node span is the tool call's, or
                # (another node's tool) the tool call's parent.
                entry = opening.tool_node(self._ledger, node, tool, tool_context)
            else:
                parent = (
                    (run.innermost_agent(tool_context.agent_name) or run.entry) if run else None
                )
                entry = opening.open_tool(self._ledger, parent, tool, tool_context, run)
            if self._capture is not None:
                self._capture.put(entry, sc.GEN_AI_TOOL_CALL_ARGUMENTS, capture.same, tool_args)
        except Exception:
            self._guard.failed("before_tool_callback")

    @override
    async def after_tool_callback(
        self,
        *,
        tool: BaseTool,
        tool_args: dict[str, Any],
        tool_context: ToolContext,
        result: dict[str, Any],
    ) -> None:
        try:
            ledger = self._ledger
            entry = ledger.get(keys.tool(tool_context.invocation_id, tool_context.function_call_id))
            if entry is None:
                return
            ledger.reattach(entry)  # see after_model_callback
            if entry.pending is not None:
                return  # already concluded: an error a callback recovered from
            if self._capture is not None:
                self._capture.put(entry, sc.GEN_AI_TOOL_CALL_RESULT, capture.same, result)
            if tool.name == transfers.TRANSFER:
                transfers.note(self._runs, tool_context, tool_args)
            # Concluded, not ended: the function response event settles it.
            outcomes.conclude_tool(
                ledger, entry, tool, result, self._classifier, self._result_failures
            )
            if self._devui is not None:
                # Under the dev server it also waits for the event id the UI joins on.
                settle = functools.partial(ledger.settle, entry)
                self._devui.hold_tool(
                    entry, tool_context.invocation_id, tool_context.function_call_id, settle
                )
        except Exception:
            self._guard.failed("after_tool_callback")

    @override
    async def on_tool_error_callback(
        self,
        *,
        tool: BaseTool,
        tool_args: dict[str, Any],
        tool_context: ToolContext,
        error: Exception,
    ) -> None:
        try:
            ledger = self._ledger
            entry = ledger.get(keys.tool(tool_context.invocation_id, tool_context.function_call_id))
            if entry is not None and entry.pending is None:
                run = self._runs.latest(tool_context.invocation_id)
                outcomes.end_failed(
                    ledger,
                    entry,
                    error,
                    run=run,
                    layer=sc.SpanKind.TOOL,
                    classifier=self._classifier,
                    foreign=outcomes.ADK_LEGACY,
                )
        except Exception:
            self._guard.failed("on_tool_error_callback")

    # -- events ----------------------------------------------------------

    @override
    async def on_event_callback(
        self, *, invocation_context: InvocationContext, event: Event
    ) -> None:
        # Called for every event: with capture off, no dev UI, no error and
        # nothing concluded, next to nothing. Each part is guarded on its own,
        # so a failure in one never skips the others.
        devui, capturing = self._devui, self._capture
        if devui is not None:
            self._dev_ui_event(devui, event)
        try:
            failed = event.error_message is not None
        except AttributeError:  # not an ADK Event: nothing to read
            failed = False
        if failed:
            self._event_error(invocation_context, event)
        try:
            route, waiting = event.actions.route, event.long_running_tool_ids
        except AttributeError:
            route = waiting = None
        if route is not None:
            self._node_route(invocation_context, event, route)
        if waiting:
            self._interrupted(invocation_context, waiting)
        ledger = self._ledger_instance
        if (
            ledger is not None
            and ledger.concluded
            and not outcomes.settle_on(ledger, event, self._runs)
        ):
            self._guard.failures += 1
        if capturing is not None:
            self._capture_final_response(capturing, invocation_context, event)
        return None

    def _dev_ui_event(self, devui: DevUi, event: Any) -> None:
        try:
            devui.on_event(event)
        except Exception:
            self._guard.failed("_dev_ui_event")

    def _interrupted(self, invocation_context: Any, waiting: Any) -> None:
        try:
            run = self._runs.by_context.get(id(invocation_context))
            if run is not None:
                run.waiting = (*run.waiting, *sorted(str(i) for i in waiting))
        except Exception:
            self._guard.failed("_interrupted")

    def _node_route(self, invocation_context: Any, event: Any, route: object) -> None:
        try:
            run = self._runs.by_context.get(id(invocation_context))
            node_info = event.node_info
            if run is not None and run.nodes is not None and node_info is not None:
                run.nodes.route(node_info.path, route)
        except Exception:
            self._guard.failed("_node_route")

    def _event_error(self, invocation_context: Any, event: Any) -> None:
        try:
            remote.record_error_event(self._runs, invocation_context, event)
        except Exception:
            self._guard.failed("_event_error")

    def _capture_final_response(
        self, capturing: capture.Capture, invocation_context: Any, event: Any
    ) -> None:
        try:
            capturing.final_response(self._runs.by_context.get(id(invocation_context)), event)
        except Exception:
            self._guard.failed("_capture_final_response")

    # -- the end ---------------------------------------------------------

    @override
    async def close(self) -> None:
        """End anything still open, then flush the tracer provider, bounded, and
        report (``pipeline/shutdown.py``). ``Runner.close()`` calls this, and ADK's
        servers close every runner when the app shuts down: the last moment
        before a server process dies by SIGTERM, with no ``atexit``."""
        manager = self._sharing.take_closing()
        ending = functools.partial(self._end_on_close, manager)
        # A Runner closing while another Runner sharing the plugin stays open
        # (ADK's eval closes one per case): the process goes on, so no flush,
        # which would wait on an exporter for every case; the last close flushes.
        flush = manager is None or self._sharing.open_count() == 0
        await teardown.close(
            self._ledger_instance, self._runs, ending, self._options.telemetry, flush=flush
        )

    def _end_on_close(self, manager: Any) -> int:
        """At ``close()``: end the runs of the Runner closing (``manager``,
        None when no close witness named one), not those of other Runners
        still open. A close no witness named ends everything unless the
        plugin is shared by two or more open Runners; a Runner's close ends
        everything when no other is open (sharing.py). Returns how many
        spans were ended."""
        ledger = self._ledger_instance
        if ledger is None:
            return 0
        before = len(ledger)
        if self._sharing.open_count() <= (0 if manager is not None else 1):
            self.end_open_spans()
            return before - len(ledger)
        try:
            for run in list(self._runs.by_context.values()):
                owned = run.manager is manager if manager is not None else None
                if owned is False or self._sharing.owned_by_open_runner(run.manager):
                    continue
                if self._devui is not None:
                    self._devui.release_under(run.entry)
                if not run.entry.ended:
                    ledger.end_entry(run.entry, Outcome.INCOMPLETE, reason="plugin_closed")
                if ledger.details is not None:
                    ledger.details.flush(run.invocation_id)
                self._runs.forget(run)
        except Exception:
            logger.warning("adk-otel: ending a closing Runner's spans failed", exc_info=True)
        return before - len(ledger)

    def end_open_spans(self, reason: str = "plugin_closed") -> None:
        """End every span still open as ``incomplete`` (``adk.close_reason``
        ``reason``): the plugin is closing or being removed, or the process is
        exiting, so no hook will end them. Never raises."""
        try:
            if self._devui is not None:
                self._devui.release_under(None)
            ledger = self._ledger_instance
            if ledger is not None:
                ledger.end_all(Outcome.INCOMPLETE, reason)
                if ledger.details is not None:
                    ledger.details.flush()
            self._runs.forget_all()
        except Exception:
            logger.warning("adk-otel: ending open spans failed", exc_info=True)

    # -- copies and pickles (lifecycle/travel.py) -------------------------

    def __getstate__(self) -> travel.State:
        """Pickled (Agent Engine's upload, multiprocessing): the name, the
        options and the noted roots, never the ledger, runs or providers."""
        return self._travelling(pickled=True)

    def __setstate__(self, state: travel.State) -> None:
        """Unpickled: a new plugin with the options that travelled."""
        AdkOtelPlugin.__init__(self, state["name"], **state["options"])
        travel.arrived(state, self._runs)

    def __copy__(self) -> AdkOtelPlugin:
        """A new plugin with the same options (providers included): a copy of
        a plugin that has run, or is running, shares none of its spans."""
        copied = self.__class__.__new__(self.__class__)
        copied.__setstate__(self._travelling(pickled=False))
        return copied

    def __deepcopy__(self, memo: dict[int, Any]) -> AdkOtelPlugin:
        return self.__copy__()

    def _travelling(self, *, pickled: bool) -> travel.State:
        return travel.state(self.name, self._options, self._runs, pickled=pickled)
