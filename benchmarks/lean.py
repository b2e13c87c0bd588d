"""``lean``: a hook tracer that keeps adk-otel's core guarantees, built lean.

A yardstick, not a product. ``overhead.py``, ``hooks.py``, ``run_path.py`` and
``calls.py`` hold adk-otel's cost against it; ``lean_profile.py`` switches its
pieces off one at a time to price each guarantee. It writes what adk-otel
writes on the benchmark workloads (the same spans, names, kinds, parents,
attributes and values, roll-ups and status; ``tests/benchmarks/test_yardsticks.py``
compares them) on google-adk 2.5 and 2.13, and keeps the core guarantees:

* concurrent runs of one plugin stay apart: one state object per run, found
  by invocation id;
* spans are current while their layer runs, so the layer's own callbacks and
  library spans made inside it see them (``attach``), in the before, after
  and error callbacks;
* each span ends after its layer's callbacks (``deferred``): a model or tool
  span at the event carrying its response, an agent span when its next
  sibling starts or the run ends, the invocation span after the run's other
  ``after_run`` callbacks;
* every span ends exactly once on success, error, cancellation and early
  close (``wrapper``: adk-otel's runner wrapper, ``adk_otel.lifecycle.runner``,
  with one closer per run);
* outcomes as adk-otel decides them (``outcomes``): the consumer closing
  early, the task being cancelled, ADK's ``is_aborted``, an abort in flight;
  an error hook's exception is an ERROR span with its ``exception`` event,
  classified once per run (adk-otel's ``reading.failures``);
* a traced run's ADK spans stay unrecorded: its ``before_run`` claims ADK's run
  span from the node tracer every tracer shares (which keeps ADK's own spans
  for a run nobody traces);
* roll-ups (``rollups``): model and tool calls, errors and their categories,
  token usage, added to the direct agent (or the run) and folded into the
  parent when a span ends.

How it stays lean. Attributes read from ADK's objects (``reading``) are built
with adk-otel's own readers and made safe once per agent, tool, model and app
(cached by what they are built from: class, name, description, parent, model),
and per run for the invocation and session ids; per span only a tool call's
id is checked, and a model response's attributes are read and made safe. A
span starts with all its attributes and is attached in its before hook;
after and error hooks record the end time and outcome and re-attach only if
something else is current; a span ends with one ``set_attributes``, one
``set_status`` and ``end(end_ns)``, detached only where it is current.

What it leaves out, and adk-otel does: sampling shortcuts (a sampled-out
span costs as much as a recorded one), metrics, content capture, the dev UI,
streaming (partial responses) and live runs, A2A (remote agents, propagation),
``transfer_to_agent``, roll-ups across a nested run (``AgentTool``), an
application's error classifier and failures reported in tool results, workflow
nodes, ``user_id`` modes other than plain, plugin ``close()``, a plugin shared
by several runners, runs without the runner wrapper beyond ending at
``after_run``, and agents whose direct parent has no open span.

``off`` switches pieces off for the profile (``PIECES``); each switch costs a
couple of bytecodes per use and no call.
"""

from __future__ import annotations

import asyncio
import functools
import sys
import time
from typing import Any

PIECES = ("attach", "deferred", "wrapper", "rollups", "outcomes", "reading", "runs")
"""What ``off`` can switch off: each is one guarantee (or, for ``reading``, the
attributes read from ADK's objects: switched off, each kind of span writes
the first mapping it built again)."""


def install(runner: Any, provider: Any, off: frozenset[str] = frozenset()) -> Any:
    """Put a lean plugin first on ``runner`` and wrap the runner with adk-otel's
    runner wrapper (unless ``wrapper`` is off); returns the plugin."""
    plugin = lean_plugin(provider, off)
    runner.plugin_manager.plugins.insert(0, plugin)
    if "wrapper" not in off:
        from adk_otel.lifecycle.runner import wrap

        wrap(runner)
    return plugin


def lean_plugin(provider: Any, off: frozenset[str] = frozenset()) -> Any:
    """A lean plugin tracing to ``provider`` (see the module doc)."""
    unknown = set(off) - set(PIECES)
    if unknown:
        raise ValueError(f"not pieces of lean: {sorted(unknown)}")
    from google.adk.plugins.base_plugin import BasePlugin
    from opentelemetry import context as otel_context
    from opentelemetry import trace
    from opentelemetry.trace import SpanKind, Status, StatusCode

    from adk_otel import semconv as sc
    from adk_otel.ledger.spans import error_type, record_exception
    from adk_otel.lifecycle.aborts import abort_reason
    from adk_otel.lifecycle.nodes import RunRoot
    from adk_otel.lifecycle.runner import CURRENT_WATCH
    from adk_otel.reading import attributes as attrs
    from adk_otel.reading import failures
    from adk_otel.util import sanitize

    attaching = "attach" not in off
    deferring = "deferred" not in off
    rolling = "rollups" not in off
    deciding = "outcomes" not in off
    reading = "reading" not in off
    by_id = "runs" not in off

    start_span = provider.get_tracer("lean").start_span
    get_current_span = trace.get_current_span
    in_context = trace.set_span_in_context
    # The runtime context's own calls, without the API's one-line wrappers.
    runtime = otel_context._RUNTIME_CONTEXT  # type: ignore[attr-defined]
    current, attach, reset = runtime.get_current, runtime.attach, runtime.detach
    time_ns, current_task, exc_info = time.time_ns, asyncio.current_task, sys.exc_info
    client = SpanKind.CLIENT
    ok_status = Status(StatusCode.OK)
    limit = sanitize.TEXT_LENGTH
    usage_totals = sc.ROLLUP_USAGE
    outcome_key, reason_key = sc.ADK_OUTCOME, sc.ADK_CLOSE_REASON
    invocation_key, conversation_key = sc.ADK_INVOCATION_ID, sc.GEN_AI_CONVERSATION_ID
    call_id_key, agent_name_key = sc.GEN_AI_TOOL_CALL_ID, sc.GEN_AI_AGENT_NAME
    stream_key = sc.GEN_AI_REQUEST_STREAM
    adk_prefix = f"{sc.ADK_SCOPE}."
    ok, error_, cancelled, incomplete = "ok", "error", "cancelled", "incomplete"
    per_call_model_keys = frozenset(
        {invocation_key, conversation_key, stream_key, sc.GEN_AI_REQUEST_STOP_SEQUENCES}
        | {key for _, key, _ in attrs.REQUEST_PARAMETERS}
        | {sc.GEN_AI_OUTPUT_TYPE}
    )
    frozen: dict[str, Any] = {}
    """With ``reading`` off: the first mapping built for each kind of span."""

    def safe(value: Any) -> Any:
        """An id or name written per run or span: checked, cleaned only if needed."""
        if value.__class__ is str and value.isascii() and len(value) <= limit:
            return value
        return sanitize.clean(value) if isinstance(value, str) else None

    def static(attributes: Any, per_span: Any) -> dict[str, Any]:
        """``attributes`` made safe, without the keys written per span."""
        return {k: v for k, v in sanitize.attributes(attributes).items() if k not in per_span}

    class Info:
        """What is built once per agent (or tool, app): span name and attributes."""

        __slots__ = ("agent_name", "attributes", "keep", "models", "name")

        def __init__(self, name: str, attributes: dict[str, Any], keep: Any = None) -> None:
            self.name = name
            self.attributes = attributes
            self.agent_name = attributes.get(agent_name_key)
            self.models: dict[Any, tuple[str, dict[str, Any]]] = {}
            self.keep = keep
            """The model object the cache key holds the id of: kept, so the id stays its."""

    class Layer:
        """One open span: its context, its place, and how it ends once concluded."""

        __slots__ = (
            "anchor",
            "children",
            "context",
            "end_attrs",
            "end_ns",
            "ended",
            "error",
            "info",
            "opened",
            "outcome",
            "parent",
            "reason",
            "span",
            "token",
            "totals",
        )

        def __init__(
            self, span: Any, context: Any, token: Any, parent: Any, totals: Any, info: Any
        ) -> None:
            self.span = span
            self.context = context
            self.token = token
            self.parent = parent
            self.totals = totals
            """Agents and runs: [model calls, tool calls, errors, categories, tokens]."""
            self.info = info
            self.children: list[Layer] = []
            self.anchor: Any = None
            self.end_ns: int | None = None
            """Set when the layer's terminal hook concluded it: its end time."""
            self.outcome: str | None = None
            self.reason: str | None = None
            self.error: BaseException | None = None
            self.end_attrs: Any = None
            self.ended = False
            self.opened: Any = None
            """A tool span's start attributes (see _unwrite_adk)."""

    class Run(Layer):
        """One ``run_async`` call: its invocation span and its open layers."""

        __slots__ = (
            "agents",
            "cancelling",
            "failures",
            "iid",
            "key",
            "models",
            "sid",
            "stream",
            "tools",
            "watch",
        )

    class LeanPlugin(BasePlugin):
        """See the module doc."""

        def __init__(self) -> None:
            super().__init__(name="lean")
            self.runs: dict[str, Run] = {}
            self.only: Run | None = None
            """With ``runs`` off: the one run (no look-up by invocation id)."""
            self.apps: dict[Any, Info] = {}
            self.agent_infos: dict[Any, Info] = {}
            self.tool_infos: dict[Any, Info] = {}
            self.bare_models: dict[Any, tuple[str, dict[str, Any]]] = {}
            """Model attributes of calls with no agent span above them."""

        # -- ending ---------------------------------------------------------

        def _end(self, layer: Layer, swept: str = incomplete, why: str = "parent_ended") -> None:
            """End ``layer`` after its open children, as concluded (else as
            ``swept`` for ``why``): one set_attributes, set_status, end."""
            if layer.ended:
                return
            layer.ended = True
            outcome = layer.outcome
            if outcome is None:
                outcome, reason = swept, why
            else:
                reason = layer.reason
            children = layer.children
            if children:
                if outcome == cancelled:
                    under, under_why = cancelled, reason or "cancelled"
                else:
                    under, under_why = incomplete, "parent_ended"
                for child in reversed(children):
                    if not child.ended:
                        self._end(child, under, under_why)
            opened = layer.opened
            if opened is not None:
                written = getattr(layer.span, "_attributes", None)
                if written is not None and len(written) > len(opened):
                    self._unwrite_adk(layer, written)
            attributes = {outcome_key: outcome}
            if reason:
                attributes[reason_key] = reason
            if layer.end_attrs:
                attributes.update(layer.end_attrs)
            parent, totals = layer.parent, layer.totals
            if totals is not None:
                models, tools, errors, categories, tokens = totals
                attributes[sc.ADK_MODEL_CALL_COUNT] = models
                attributes[sc.ADK_TOOL_CALL_COUNT] = tools
                attributes[sc.ADK_ERROR_COUNT] = errors
                attributes[sc.ADK_ERROR_CATEGORIES] = (
                    tuple(sorted(categories)) if categories else ()
                )
                if tokens:
                    attributes.update(tokens)
                if parent is not None:  # folded into the parent
                    above = parent.totals
                    above[0] += models
                    above[1] += tools
                    if errors:
                        above[2] += errors
                        above[3] = (above[3] or set()) | categories
                    if tokens:
                        if above[4] is None:
                            above[4] = dict(tokens)
                        else:
                            sums = above[4]
                            for key, value in tokens.items():
                                sums[key] = sums.get(key, 0) + value
            error = layer.error
            span = layer.span
            if outcome == error_:
                attributes[sc.ERROR_TYPE] = error_type(error) if error is not None else reason
                category = attributes.setdefault(sc.ADK_ERROR_CATEGORY, "other")
                if rolling and parent is not None:
                    above = parent.totals
                    above[2] += 1
                    above[3] = (above[3] or set()) | {category}
            span.set_attributes(attributes)
            if outcome == ok:
                span.set_status(ok_status)
            elif outcome == error_:
                if error is not None:
                    record_exception(span, error)
                    span.set_status(Status(StatusCode.ERROR, sanitize.description(error)))
                else:
                    span.set_status(Status(StatusCode.ERROR, reason))
            if attaching and current() is layer.context:  # detached only where current
                # try/except, not contextlib.suppress: this runs for every span.
                try:  # noqa: SIM105
                    reset(layer.token)
                except (ValueError, RuntimeError):
                    pass  # current in another Context too: not ours to change
            layer.anchor = None
            span.end(layer.end_ns)

        def _reattach(self, layer: Layer) -> None:
            if current() is not layer.context:
                layer.token = attach(layer.context)

        def _closed(self, run: Run, outcome: Any, *, reason: str, error: Any) -> None:
            """The runner wrapper's closer, once ADK's generator is done: ends
            the run (and what it left open) as after_run decided, else as the
            wrapper saw it stop (cancelled, closed early, failed)."""
            if run.outcome is None:
                run.outcome, run.reason, run.error = outcome._value_, reason, error
                if outcome._value_ == error_ and error is not None:
                    run.end_attrs = failures.classify(
                        error, "invocation", run.failures, None
                    ).attributes
            self._end(run)
            if self.runs.get(run.key) is run:
                del self.runs[run.key]

        # -- outcomes -------------------------------------------------------

        def _agent_outcome(self, run: Run, callback_context: Any) -> tuple[str, str | None]:
            """How an agent that reached after_agent ended (adk-otel's checks)."""
            watch = run.watch
            if watch is not None and watch.closing_early:
                return incomplete, "consumer_closed"
            task = current_task()
            if (task is not None and task.cancelling() > run.cancelling) or getattr(
                callback_context, "is_aborted", False
            ):
                return cancelled, "cancelled"
            aborted = abort_reason(exc_info()[1])
            if aborted is not None:
                return cancelled, aborted
            return ok, None

        def _run_outcome(self, run: Run, invocation_context: Any) -> tuple[str, str | None]:
            """How a run that reached after_run ended (adk-otel's checks)."""
            watch = run.watch
            if watch is not None and watch.closing_early:
                return incomplete, "consumer_closed"
            if isinstance(exc_info()[1], GeneratorExit):
                # ADK runs after_run in a `finally` when its generator is closed.
                return incomplete, "generator_exit" if watch is not None else "consumer_closed"
            if getattr(invocation_context, "is_aborted", False):
                return cancelled, "aborted"
            task = current_task()
            if task is not None and task.cancelling() > run.cancelling:
                return cancelled, "cancelled"
            return ok, None

        def _failed(self, layer: Layer, run: Run, error: BaseException, kind: str) -> None:
            """An error hook: the outcome, the end time, current again."""
            if layer.end_ns is not None:
                return
            layer.end_ns = time_ns()
            aborted = abort_reason(error)
            if aborted is not None:
                layer.outcome, layer.reason = cancelled, aborted
            else:
                layer.outcome, layer.error = error_, error
                layer.end_attrs = failures.classify(error, kind, run.failures, None).attributes
            if attaching and layer.parent is not None:
                self._reattach(layer)

        # -- runs -----------------------------------------------------------

        async def before_run_callback(self, *, invocation_context: Any) -> None:
            ic = invocation_context
            root = ic.agent
            adk_run_span = get_current_span()
            if type(adk_run_span) is RunRoot:
                adk_run_span.claimed = True  # traced: ADK's own spans stay unrecorded
            if reading:
                key = (ic.app_name, getattr(root, "name", None))
                app = self.apps.get(key)
                if app is None:
                    app = self.apps[key] = Info(
                        attrs.invocation_opening(*key, None).name,
                        static(attrs.invocation(ic), (invocation_key, conversation_key)),
                    )
                iid, sid, uid = safe(ic.invocation_id), safe(ic.session.id), safe(ic.user_id)
                attributes = {**app.attributes, invocation_key: iid}
                if sid:
                    attributes[conversation_key] = sid
                if uid:
                    attributes[sc.USER_ID] = attributes[sc.ADK_USER_ID] = uid
                mode = getattr(ic.run_config, "streaming_mode", None)
                stream = mode is not None and getattr(mode, "value", mode) == "sse"
                name = app.name
            else:
                iid, sid, stream = ic.invocation_id, None, False
                name = f"invocation {ic.app_name}"
                attributes = frozen.get("invocation")
                if attributes is None:
                    attributes = frozen["invocation"] = dict(
                        sanitize.attributes(attrs.invocation(ic))
                    )
            span = start_span(name, attributes=attributes)
            totals = [0, 0, 0, None, None] if rolling else None
            run = Run(span, in_context(span), None, None, totals, None)
            run.key, run.iid, run.sid, run.stream = ic.invocation_id, iid, sid, stream
            run.agents, run.models, run.tools, run.failures = {}, {}, {}, {}
            run.cancelling = 0
            if deciding:
                task = current_task()
                run.cancelling = task.cancelling() if task is not None else 0
            if by_id:
                self.runs[ic.invocation_id] = run
            else:
                self.only = run
            watch = run.watch = CURRENT_WATCH.get()
            if watch is not None:
                watch.closers.append(functools.partial(self._closed, run))
                if attaching:
                    # The wrapper runs ADK in a private context: current for the
                    # run's callbacks, never in the caller's, never detached.
                    run.token = attach(run.context)

        async def after_run_callback(self, *, invocation_context: Any) -> None:
            run = self.runs.get(invocation_context.invocation_id) if by_id else self.only
            if run is None or run.end_ns is not None:
                return
            run.end_ns = time_ns()
            if deciding:
                run.outcome, run.reason = self._run_outcome(run, invocation_context)
            else:
                run.outcome = ok
            if run.watch is None or not deferring:
                # No wrapper: nothing later ends it (the run's later after_run
                # callbacks see it ended).
                self._end(run)
                if self.runs.get(run.key) is run:
                    del self.runs[run.key]

        async def on_run_error_callback(self, *, invocation_context: Any, error: Exception) -> None:
            run = self.runs.get(invocation_context.invocation_id) if by_id else self.only
            if run is not None:
                self._failed(run, run, error, "invocation")

        # -- agents ---------------------------------------------------------

        async def before_agent_callback(self, *, agent: Any, callback_context: Any) -> None:
            run = self.runs.get(callback_context.invocation_id) if by_id else self.only
            if run is None:
                return
            above = agent.parent_agent
            above_name = above.name if above is not None else None
            parent = run.agents.get(above_name) if above_name is not None else None
            if parent is None or parent.ended:
                parent = run
            for sibling in parent.children:  # its layer is over: a new one begins
                if sibling.end_ns is not None and not sibling.ended:
                    self._end(sibling)
            if reading:
                model = agent.__dict__.get("model")
                key = (
                    agent.__class__,
                    agent.name,
                    agent.description,
                    above_name,
                    model if model.__class__ is str else id(model),
                )
                info = self.agent_infos.get(key)
                if info is None:
                    info = self.agent_infos[key] = Info(
                        sanitize.clean(f"invoke_agent {agent.name}"),
                        static(
                            attrs.agent(agent, callback_context, above_name),
                            (invocation_key, conversation_key),
                        ),
                        model,
                    )
                attributes = {**info.attributes, invocation_key: run.iid}
                if run.sid:
                    attributes[conversation_key] = run.sid
                name = info.name
            else:
                info, name = None, f"invoke_agent {agent.name}"
                attributes = frozen.get("agent")
                if attributes is None:
                    attributes = frozen["agent"] = dict(
                        sanitize.attributes(attrs.agent(agent, callback_context, above_name))
                    )
            span = start_span(name, context=parent.context, attributes=attributes)
            context = in_context(span)
            layer = Layer(
                span,
                context,
                attach(context) if attaching else None,
                parent,
                [0, 0, 0, None, None] if rolling else None,
                info,
            )
            parent.children.append(layer)
            run.agents[agent.name] = layer

        async def after_agent_callback(self, *, agent: Any, callback_context: Any) -> None:
            run = self.runs.get(callback_context.invocation_id) if by_id else self.only
            layer = run.agents.get(agent.name) if run is not None else None
            if layer is None or layer.end_ns is not None:
                return
            layer.end_ns = time_ns()
            if deciding:
                layer.outcome, layer.reason = self._agent_outcome(run, callback_context)
            else:
                layer.outcome = ok
            if not deferring:
                self._end(layer)
            elif attaching:
                self._reattach(layer)  # for the agent's own after callbacks

        async def on_agent_error_callback(
            self, *, agent: Any, callback_context: Any, error: Exception
        ) -> None:
            run = self.runs.get(callback_context.invocation_id) if by_id else self.only
            layer = run.agents.get(agent.name) if run is not None else None
            if layer is not None:
                self._failed(layer, run, error, "agent")

        # -- models ---------------------------------------------------------

        async def before_model_callback(self, *, callback_context: Any, llm_request: Any) -> None:
            run = self.runs.get(callback_context.invocation_id) if by_id else self.only
            if run is None:
                return
            parent = run.agents.get(callback_context.agent_name)
            if parent is None or parent.ended:
                parent = run
            if reading:
                model = llm_request.model
                info = parent.info
                cache = info.models if info is not None else self.bare_models
                key = model if info is not None else (callback_context.agent_name, model)
                found = cache.get(key)
                if found is None:
                    found = cache[key] = (
                        sanitize.clean(f"generate_content {attrs.model_name(llm_request)}"),
                        static(
                            attrs.model_request(callback_context, llm_request),
                            per_call_model_keys,
                        ),
                    )
                name, attributes = found[0], {**found[1], invocation_key: run.iid}
                if run.sid:
                    attributes[conversation_key] = run.sid
                if run.stream:
                    attributes[stream_key] = True
                config = llm_request.config
                if config is not None:
                    attrs.request_parameters(attributes, config, latest=False)
            else:
                name = f"generate_content {llm_request.model}"
                attributes = frozen.get("model")
                if attributes is None:
                    attributes = frozen["model"] = dict(
                        sanitize.attributes(attrs.model_request(callback_context, llm_request))
                    )
            span = start_span(name, context=parent.context, kind=client, attributes=attributes)
            context = in_context(span)
            layer = Layer(span, context, attach(context) if attaching else None, parent, None, None)
            actions = callback_context.actions
            layer.anchor = actions  # its id is the key while the span is open
            run.models[id(actions)] = layer
            parent.children.append(layer)
            if rolling:
                parent.totals[0] += 1

        async def after_model_callback(self, *, callback_context: Any, llm_response: Any) -> None:
            run = self.runs.get(callback_context.invocation_id) if by_id else self.only
            layer = run.models.get(id(callback_context.actions)) if run is not None else None
            if layer is None or layer.end_ns is not None:
                return
            layer.end_ns = time_ns()
            if reading:
                response = sanitize.attributes(attrs.model_response(llm_response))
            else:
                response = frozen.get("response")
                if response is None:
                    response = frozen["response"] = dict(
                        sanitize.attributes(attrs.model_response(llm_response))
                    )
            layer.outcome = ok
            if deciding and llm_response.error_code:
                layer.outcome, layer.reason = error_, str(llm_response.error_code)
                blocked = failures.classify_response_error(llm_response.error_code).attributes
                response = {**response, **blocked}
            layer.end_attrs = response
            if rolling and response:
                totals = layer.parent.totals
                tokens = totals[4]
                for key, value in response.items():
                    total = usage_totals.get(key)
                    if total is not None and value.__class__ is int:
                        if tokens is None:
                            tokens = totals[4] = {}
                        tokens[total] = tokens.get(total, 0) + value
            if not deferring:
                del run.models[id(callback_context.actions)]
                self._end(layer)
            elif attaching:
                self._reattach(layer)  # for the after_model callbacks after this one

        async def on_model_error_callback(
            self, *, callback_context: Any, llm_request: Any, error: Exception
        ) -> None:
            run = self.runs.get(callback_context.invocation_id) if by_id else self.only
            layer = run.models.get(id(callback_context.actions)) if run is not None else None
            if layer is not None:
                self._failed(layer, run, error, "model")

        # -- tools ----------------------------------------------------------

        async def before_tool_callback(
            self, *, tool: Any, tool_args: Any, tool_context: Any
        ) -> None:
            run = self.runs.get(tool_context.invocation_id) if by_id else self.only
            if run is None:
                return
            parent = run.agents.get(tool_context.agent_name)
            if parent is None or parent.ended:
                parent = run
            call_id = tool_context.function_call_id
            if reading:
                key = (tool.__class__, tool.name, tool.description)
                info = self.tool_infos.get(key)
                if info is None:
                    info = self.tool_infos[key] = Info(
                        sanitize.clean(f"execute_tool {tool.name}"),
                        static(
                            attrs.tool(tool, tool_context),
                            (call_id_key, agent_name_key, invocation_key),
                        ),
                    )
                agent_name = (
                    parent.info.agent_name
                    if parent.info is not None
                    else safe(tool_context.agent_name)
                )
                attributes = {
                    **info.attributes,
                    call_id_key: safe(call_id),
                    agent_name_key: agent_name,
                    invocation_key: run.iid,
                }
                name = info.name
            else:
                name = f"execute_tool {tool.name}"
                attributes = frozen.get("tool")
                if attributes is None:
                    attributes = frozen["tool"] = dict(
                        sanitize.attributes(attrs.tool(tool, tool_context))
                    )
            span = start_span(name, context=parent.context, attributes=attributes)
            context = in_context(span)
            layer = Layer(span, context, attach(context) if attaching else None, parent, None, None)
            layer.opened = attributes
            run.tools[call_id] = layer
            parent.children.append(layer)
            if rolling:
                parent.totals[1] += 1

        async def after_tool_callback(
            self, *, tool: Any, tool_args: Any, tool_context: Any, result: Any
        ) -> None:
            run = self.runs.get(tool_context.invocation_id) if by_id else self.only
            layer = run.tools.get(tool_context.function_call_id) if run is not None else None
            if layer is None or layer.end_ns is not None:
                return
            layer.end_ns = time_ns()
            layer.outcome = ok
            if not deferring:
                del run.tools[tool_context.function_call_id]
                self._end(layer)
            elif attaching:
                self._reattach(layer)  # for the after_tool callbacks after this one

        async def on_tool_error_callback(
            self, *, tool: Any, tool_args: Any, tool_context: Any, error: Exception
        ) -> None:
            run = self.runs.get(tool_context.invocation_id) if by_id else self.only
            layer = run.tools.get(tool_context.function_call_id) if run is not None else None
            if layer is not None:
                self._failed(layer, run, error, "tool")

        # -- events ---------------------------------------------------------

        async def on_event_callback(self, *, invocation_context: Any, event: Any) -> None:
            """The event carrying a model's or a tool's response: every callback
            of that layer has run, so its span ends."""
            run = self.runs.get(invocation_context.invocation_id) if by_id else self.only
            if run is None:
                return
            models = run.models
            if models:
                key = id(event.actions)
                layer = models.get(key)
                if layer is not None and layer.end_ns is not None:
                    del models[key]
                    self._end(layer)
            tools = run.tools
            if tools and event.content is not None:
                for part in event.content.parts or ():
                    response = part.function_response
                    if response is not None:
                        layer = tools.get(response.id)
                        if layer is not None and layer.end_ns is not None:
                            del tools[response.id]
                            self._end(layer)

        def _unwrite_adk(self, layer: Layer, written: Any) -> None:
            """ADK 2.5 writes its own tool telemetry (``gcp.vertex.agent.*``,
            over ``gen_ai.tool.type``) to the span current after the tool's
            last callback, which is this one: undone, as adk-otel does."""
            for key in [k for k in written if k.startswith(adk_prefix)]:
                del written[key]
            changed = {k: v for k, v in layer.opened.items() if written.get(k) != v}
            if changed:
                layer.end_attrs = {**changed, **(layer.end_attrs or {})}

    return LeanPlugin()
