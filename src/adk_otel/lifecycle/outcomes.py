"""How a layer ends: the outcome its terminal hook decides, and the event
that settles it.

An after hook means success only when nothing says otherwise: the run's
consumer closing early, the task being cancelled, an abort in flight, a
remote agent's reported failure, a model's error code, a tool's failed
result. An error hook's exception is classified once per run, so every layer
it passes through shows the category of the layer it came from. Model and
tool spans are concluded, not ended, by their hooks: the response event ADK
emits after their last callback settles them.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from typing import Any

from opentelemetry.util.types import AttributeValue

from .. import semconv as sc
from ..ledger.spans import Entry
from ..ledger.telemetry import TelemetryLedger
from ..reading import attributes as attrs
from ..reading import failures
from ..reading.failures import ErrorClassifier, Failure
from ..semconv import Outcome
from ..util.redact import guarded
from . import keys
from .aborts import abort_reason
from .runs import Run, Runs, is_cancelled

logger: logging.Logger = guarded(logging.getLogger(__name__))

ADK_LEGACY = f"{sc.ADK_SCOPE}."
"""Prefix of the attributes ADK's own tool telemetry writes (``gcp.vertex.agent.``).
Some ADK releases (2.5) write it to the current span after the tool's last
callback, which is adk-otel's span now: at the end adk-otel's start
attributes are written again and ADK's ones (content among them) dropped."""


def of_run(
    ledger: TelemetryLedger, run: Run, invocation_context: Any
) -> tuple[Outcome, str | None]:
    """The outcome and close reason of a run that reached ``after_run``."""
    entry = run.entry
    if not (ledger.records_all or entry.recording):  # ledger.will_record(entry)
        # Sampled out, nothing under it recorded, no metrics: the outcome
        # would be written nowhere, so it is not worked out.
        return Outcome.OK, None
    closed = closing_reason(run)
    if closed is not None:
        # ADK runs after_run in a `finally` also when its generator is being
        # closed ("treated as a clean completion"): not a success.
        return Outcome.INCOMPLETE, closed
    if getattr(invocation_context, "is_aborted", False):
        return Outcome.CANCELLED, "aborted"
    if is_cancelled(run):
        # Some ADK releases (2.5) run after_run while the task is being
        # cancelled; an after hook means success only.
        return Outcome.CANCELLED, "cancelled"
    return Outcome.OK, None


def closing_reason(run: Run | None) -> str | None:
    """``adk.close_reason`` of a layer ending while its run's generator is being
    closed, else None: the consumer closing early (the runner wrapper saw it,
    or, without the wrapper, a GeneratorExit in flight), or code inside the run
    closing it (a GeneratorExit in flight under the wrapper)."""
    if run is not None and run.closing_early:
        return "consumer_closed"
    if isinstance(sys.exc_info()[1], GeneratorExit):
        return "generator_exit" if run is not None and run.watch is not None else "consumer_closed"
    return None


def conclude_agent(
    ledger: TelemetryLedger, entry: Entry, run: Run | None, callback_context: Any
) -> None:
    """Conclude an agent span at ``after_agent``."""
    if not (ledger.records_all or entry.recording):  # ledger.will_record(entry)
        # Sampled out, nothing under it recorded, no metrics: no outcome to work out.
        ledger.conclude(entry, Outcome.OK)
        return
    # Some ADK releases (2.13) run after_agent from a `finally` while a
    # CancelledError the agent's code raised (a future cancelled under it)
    # is in flight: an abort, not a success, though the task is not cancelling.
    in_flight = sys.exc_info()[1]
    aborted = abort_reason(in_flight) if in_flight is not None else None
    reported = run.reported.pop(entry, None) if run is not None and run.reported else None
    if run is not None and run.watch is not None and run.watch.closing_early:
        ledger.conclude(entry, Outcome.INCOMPLETE, reason="consumer_closed")
    elif is_cancelled(run) or getattr(callback_context, "is_aborted", False):
        ledger.conclude(entry, Outcome.CANCELLED, reason="cancelled")
    elif aborted is not None:
        ledger.conclude(entry, Outcome.CANCELLED, reason=aborted)
    elif reported is None:
        ledger.conclude(entry, Outcome.OK)
    elif reported.cancelled:
        ledger.conclude(entry, Outcome.CANCELLED, reason="remote_canceled")
    elif reported.error is not None:
        reason, description = reported.error
        failure = reported.failure or Failure(failures.Category.REMOTE_FAILED)
        ledger.conclude(
            entry, Outcome.ERROR, reason=reason, description=description, extra=failure.attributes
        )
    else:
        ledger.conclude(entry, Outcome.OK)


def conclude_model(
    ledger: TelemetryLedger,
    entry: Entry,
    llm_response: Any,
    response: Mapping[str, AttributeValue] | None,
) -> None:
    """Conclude a model span at its final response: an error when ADK gave
    the response an error code (a finish or block reason)."""
    error_code = getattr(llm_response, "error_code", None)
    if error_code:
        blocked = failures.classify_response_error(error_code).attributes
        extra = {**response, **blocked} if response else blocked
        ledger.conclude(entry, Outcome.ERROR, reason=str(error_code), extra=extra)
    else:
        ledger.conclude(entry, Outcome.OK, extra=response)


def conclude_tool(
    ledger: TelemetryLedger,
    entry: Entry,
    tool: Any,
    result: Any,
    classifier: ErrorClassifier | None,
    result_failures: bool,
) -> None:
    """Conclude a tool span at ``after_tool``: an error when the result
    reports a failure (ADK's error shape, its argument checks, MCP
    ``isError``), though the agent carries on."""
    failure = failures.tool_result_failure(tool, result, classifier, result_failures)
    if failure is None:
        ledger.conclude(entry, Outcome.OK, foreign=ADK_LEGACY)
        return
    description = failure.message or failure.category
    ledger.conclude(
        entry,
        Outcome.ERROR,
        reason=sc.MCP_TOOL_ERROR,
        description=description,
        extra=failure.attributes,
        foreign=ADK_LEGACY,
    )


def end_failed(
    ledger: TelemetryLedger,
    entry: Entry,
    error: BaseException,
    *,
    run: Run | None,
    layer: str,
    classifier: ErrorClassifier | None,
    foreign: str | None = None,
) -> None:
    """Conclude a layer of ``run`` that failed with ``error``; it ends after
    the layer's other error callbacks. ``foreign``: see :meth:`Ledger.conclude`."""
    if entry.pending is None:
        ledger.reattach(entry)
    aborted = abort_reason(error)
    # Some ADK releases (2.15) report a model stream closed before its end to
    # the error hooks as a CancelledError, with the GeneratorExit in flight: a
    # close, not a cancellation, as on releases that send no hook for it.
    closed = closing_reason(run) if aborted == "cancelled" else None
    if closed is not None:
        ledger.conclude(entry, Outcome.INCOMPLETE, reason=closed, foreign=foreign)
    elif aborted is not None:
        ledger.conclude(entry, Outcome.CANCELLED, reason=aborted, foreign=foreign)
    elif is_cancelled(run):
        ledger.conclude(entry, Outcome.CANCELLED, reason="cancelled", foreign=foreign)
    else:
        failure = classified(error, layer, run, classifier)
        ledger.conclude(
            entry, Outcome.ERROR, error=error, extra=failure.attributes, foreign=foreign
        )


def classified(
    error: BaseException, layer: str, run: Run | None, classifier: ErrorClassifier | None
) -> Failure:
    """As first classified in this run: every layer shows the category of
    the layer the exception came from."""
    if run is None:
        return failures.classify(error, layer, None, classifier)
    if run.failures is None:
        run.failures = {}
    return failures.classify(error, layer, run.failures, classifier)


_REBUILT_EVENTS = [True]
"""Whether this ADK may build a model's response event anew (ADK 2.5): true
until a response event is found by its model call's ``EventActions`` (ADK
2.13 keeps them), after which no event looks further. Were an ADK to keep
them on one path only, a model span on another would end at its agent's end,
with its own end time and outcome, as it did before this look."""


def settle_on(ledger: TelemetryLedger, event: Any, runs: Runs | None = None) -> bool:
    """End the model or tool spans whose response this event carries: every
    callback of their layer has run by the time ADK emits it. False when
    that failed (logged).

    A model call's span is found by the response event's ``EventActions``.
    ADK 2.5 builds that event anew (``Event.model_validate`` over the dumped
    event), with another ``EventActions``: then the innermost agent of the
    event's author (in ``runs``) ends its concluded model calls, whose layers
    are over once that agent emits a complete event. Without this they stayed
    open until the agent ended, a long turn holding all of them."""
    try:
        if not event.partial:
            model = ledger.get(keys.model(event.actions))
            if model is not None:
                _REBUILT_EVENTS[0] = False
                ledger.settle(model)
            elif runs is not None and _REBUILT_EVENTS[0]:
                run = runs.latest(event.invocation_id)
                agent = run.innermost_agent(event.author) if run is not None else None
                if agent is not None and agent.children:
                    ledger.settle_children(agent, keys.is_model)
        if ledger.concluded:
            for call_id in attrs.function_response_ids(event):
                tool = ledger.get(keys.tool(event.invocation_id, call_id))
                if tool is not None:
                    ledger.settle(tool)
    except Exception:
        logger.debug("adk-otel: settling spans failed", exc_info=True)
        return False
    return True
