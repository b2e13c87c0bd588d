"""Remote (A2A) agents: the trace goes out with their requests, and what
they report comes back onto their agent spans.

ADK turns a remote task that failed, was rejected or broke off into a
response or an event, not an exception, so no error hook fires for it: the
failure is noted on the remote agent's span here and decides its outcome at
``after_agent`` (``outcomes.conclude_agent``).
"""

from __future__ import annotations

import contextlib
import weakref
from typing import Any

from .. import semconv as sc
from ..integrations import a2a
from ..reading import attributes as attrs
from ..reading import failures
from ..util import sanitize
from .runs import Runs

A2A_REQUEST_FAILED = "a2a_request_failed"


def propagate_from(propagating: weakref.WeakValueDictionary[int, Any], root: Any) -> None:
    """Make the remote agents under ``root`` carry the trace (see integrations/a2a.py),
    once per root agent; ``propagating`` is weak, so agents built per request
    are not kept alive."""
    with contextlib.suppress(TypeError):  # an agent without weak references
        propagating[id(root)] = root
    a2a.propagate_from(attrs.remote_agents(root))


def record_response(runs: Runs, invocation_context: Any, response: Any) -> None:
    """A response a remote agent received: its task's id and state go on the
    agent's span; a failed task makes the span an error."""
    run = runs.latest(getattr(invocation_context, "invocation_id", None))
    agent = getattr(invocation_context, "agent", None)
    entry = run.innermost_agent(getattr(agent, "name", None)) if run is not None else None
    if run is None or entry is None:
        return
    task_id, state, message = attrs.a2a_task(response)
    found = {sc.A2A_TASK_ID: task_id, sc.A2A_TASK_STATE: state}
    entry.span.set_attributes(sanitize.attributes({k: str(v) for k, v in found.items() if v}) or {})
    if state in sc.A2A_FAILED_STATES:
        _note_error_id(entry, message)
        reported = run.report(entry)
        reported.error = (sc.A2A_TASK_FAILED, f"remote task {state}: {message or ''}")
        reported.failure = failures.Failure(failures.Category.REMOTE_FAILED)
    elif state == "canceled":
        run.report(entry).cancelled = True


def record_error_event(runs: Runs, invocation_context: Any, event: Any) -> None:
    """A remote agent that reports a failure as an event (ADK yields one
    with ``error_message`` when an A2A request fails or breaks off)."""
    author = getattr(event, "author", None)
    agent = getattr(invocation_context, "agent", None)
    if getattr(agent, "name", None) != author:
        find = getattr(agent, "find_agent", None)
        agent = find(author) if callable(find) and isinstance(author, str) else None
    if not attrs.is_remote_agent(agent):
        return
    run = runs.latest(getattr(invocation_context, "invocation_id", None))
    entry = run.innermost_agent(author) if run is not None else None
    if run is None or entry is None:
        return
    reported = run.report(entry)
    if reported.error is not None:
        return
    _note_error_id(entry, event.error_message)
    failure = failures.classify_remote_event(
        event.error_message, getattr(event, "custom_metadata", None)
    )
    reason = sc.A2A_TASK_FAILED if failure.category == "remote_failed" else A2A_REQUEST_FAILED
    reported.failure = failure
    reported.error = (reason, failure.message)


def _note_error_id(entry: Any, message: Any) -> None:
    """A failure the serving side sent as an id for its log: the id on the span."""
    error_id = failures.remote_error_id(message)
    if error_id is not None:
        entry.span.set_attribute(sc.ADK_REMOTE_ERROR_ID, error_id)
