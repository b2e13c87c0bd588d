"""Runs as an ADK ``EvalSet``: one eval case per session (or per run), as JSON.

The document is ADK's ``EvalSet`` as its own eval-set manager saves one
(field names as in ADK's models; ADK's loader also takes its camelCase
aliases): each run an ``Invocation`` with the user's content, the final
response and, as the expected trajectory, the run's tool calls with their
arguments and responses. What a trace cannot say is never made up: a run
captured without content is an error naming the setting to turn on; a run
that failed keeps the user's turn and the tool calls up to the failure, has
no ``final_response``, and its case lists under ``adk_otel.todo`` what a
person has to fill in (ADK's ``EvalCase`` keeps extra keys as they are).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ... import semconv as sc
from ..io.model import SpanRecord
from .captured import as_response, captured, content, function_call
from .runs import Run

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_SET_UNSAFE = re.compile(r"[^A-Za-z0-9_]+")
_ID_PART = 80
DEFAULT_USER = "user"
"""``session_input.user_id`` for runs recorded without one (``user_id="off"``)."""


class EvalSetError(ValueError):
    """Runs that cannot become eval cases (one-line message)."""


@dataclass(frozen=True)
class Case:
    """One eval case: its id, its runs, and what a person must fill in."""

    eval_id: str
    runs: tuple[Run, ...]
    todo: tuple[str, ...]
    json: dict[str, Any]


def group(runs: Sequence[Run], selected: Sequence[Run], *, per_invocation: bool) -> list[list[Run]]:
    """The runs of each case, in order: per invocation, each selected run
    alone; per session, every run of each session with a selected run, so a
    failing turn keeps the turns before it."""
    if per_invocation:
        return [[run] for run in selected]
    sessions: dict[tuple[str | None, ...], list[Run]] = {}
    for run in runs:
        sessions.setdefault(_session_key(run), []).append(run)
    keys = dict.fromkeys(_session_key(run) for run in selected)
    return [sessions[key] for key in keys]


def _session_key(run: Run) -> tuple[str | None, ...]:
    if run.session is None:  # without a session id, a run is its own conversation
        return (run.trace_id, run.invocation_id)
    return (run.app, run.user, run.session)


def case(runs: Sequence[Run]) -> Case:
    """The eval case of one conversation's runs."""
    first = runs[0]
    todo: list[str] = []
    conversation = []
    for index, run in enumerate(runs):
        invocation, notes = _invocation(run)
        conversation.append(invocation)
        todo += [f"conversation[{index}]: {note}" for note in notes]
    state, state_note = _initial_state(first)
    if state_note is not None:
        todo.append(f"session_input.state: {state_note}")
    eval_id = "-".join(
        _safe(part, _UNSAFE)
        for part in (first.app or "app", first.session or first.trace_id, first.invocation_id)
        if part
    )
    source: dict[str, Any] = {"trace_ids": list(dict.fromkeys(run.trace_id for run in runs))}
    if first.session is not None:
        source["session_id"] = first.session
    if todo:
        source["todo"] = todo
    document = {
        "eval_id": eval_id,
        "conversation": conversation,
        "session_input": {
            "app_name": first.app or "app",
            "user_id": first.user or DEFAULT_USER,
            "state": state,
        },
        "creation_timestamp": _seconds(first.start_ns),
        "adk_otel": source,
    }
    return Case(eval_id, tuple(runs), tuple(todo), document)


def _initial_state(run: Run) -> tuple[dict[str, Any], str | None]:
    """The session's state as the case's first run started, when content
    capture recorded one (an empty state is not recorded), and a note when
    it cannot be replayed as recorded."""
    state = captured(run.invocation, sc.ADK_SESSION_STATE)
    if state is None:
        return {}, None
    if state.truncated:
        return {}, (
            "the session's state was cut to the content length limit "
            f"({sc.CONTENT_MAX_LENGTH_ENV}): left empty, fill it in"
        )
    if not (state.parsed and isinstance(state.value, Mapping)):
        return {}, (
            "the session's state is not a JSON object as recorded (rewritten by the "
            "redact hook?): left empty, fill it in"
        )
    return dict(state.value), None


def eval_set(cases: Sequence[Case], *, set_id: str, description: str) -> dict[str, Any]:
    """ADK's ``EvalSet`` of ``cases``, stamped with its latest run's start (so
    the same traces give the same file)."""
    starts = [run.start_ns for item in cases for run in item.runs]
    return {
        "eval_set_id": set_id,
        "name": set_id,
        "description": description,
        "eval_cases": [item.json for item in cases],
        "creation_timestamp": _seconds(max(starts, default=0)),
    }


def set_id_for(name: str) -> str:
    """An eval set id ADK's eval-set manager accepts (letters, digits, ``_``)."""
    return _safe(name, _SET_UNSAFE).strip("_") or "from_traces"


# -- one run -------------------------------------------------------------------


def _invocation(run: Run) -> tuple[dict[str, Any], list[str]]:
    notes: list[str] = []
    user = captured(run.invocation, sc.GEN_AI_INPUT_MESSAGES)
    if user is None:
        raise EvalSetError(
            f"trace {run.trace_id}: {_which(run)} was captured without content (no user message "
            f"on its invocation span); turn content capture on where it runs "
            f"({sc.CONTENT_CAPTURE_ENV}=SPAN_ONLY, or instrument(..., capture_content=True)) "
            "to make eval cases of its runs, or leave it out (--trace-id, --where)"
        )
    if user.truncated:
        raise _cut(run, "the user's message")
    user_content = content(user, "user")
    notes += [f"the user's message had {lost}: left out" for lost in user_content.lost]
    if not user.parsed:
        notes.append(
            "the user's message is not the conventions' JSON as recorded (rewritten by "
            "the redact hook?): kept as its text"
        )
    uses, responses = [], []
    for tool in run.tools:
        name = str(tool.attributes.get(sc.GEN_AI_TOOL_NAME) or tool.name.split(" ", 1)[-1])
        call_id = tool.attributes.get(sc.GEN_AI_TOOL_CALL_ID)
        arguments = captured(tool, sc.GEN_AI_TOOL_CALL_ARGUMENTS)
        args: Any = None
        if arguments is None:
            notes.append(
                f"the arguments of tool {name!r} are not in the trace (dropped by the "
                "redact hook?): the call has none"
            )
        elif arguments.truncated:
            raise _cut(run, f"the arguments of tool {name!r}")
        elif arguments.parsed and isinstance(arguments.value, Mapping):
            args = arguments.value
        else:
            notes.append(
                f"the arguments of tool {name!r} are not a JSON object as recorded "
                "(rewritten by the redact hook?): kept under 'value'"
            )
            args = {"value": arguments.value}
        uses.append(function_call(call_id, name, args))
        result = captured(tool, sc.GEN_AI_TOOL_CALL_RESULT)
        if tool.outcome != sc.Outcome.ERROR and result is not None:
            response: dict[str, Any] = {"name": name, "response": as_response(result.value)}
            if isinstance(call_id, str) and call_id:
                response = {"id": call_id, **response}
            responses.append(response)
    invocation: dict[str, Any] = {"user_content": user_content.json}
    if run.invocation_id is not None:
        invocation = {"invocation_id": run.invocation_id, **invocation}
    final = _final_response(run, notes)
    if final is not None:
        invocation["final_response"] = final
    invocation["intermediate_data"] = {"tool_uses": uses, "tool_responses": responses}
    invocation["creation_timestamp"] = _seconds(run.start_ns)
    return invocation, notes


def _final_response(run: Run, notes: list[str]) -> dict[str, Any] | None:
    if run.outcome != sc.Outcome.OK:
        failure = run.failure
        why = f" ({_error(failure)})" if failure is not None else ""
        notes.append(
            f"the run ended {run.outcome or 'without an outcome'}{why}: it has no final "
            "response to expect; write the answer the agent should give as final_response"
        )
        return None
    output = captured(run.invocation, sc.GEN_AI_OUTPUT_MESSAGES)
    if output is None:
        notes.append(
            "the run gave no final response: write the answer the agent should give "
            "as final_response"
        )
        return None
    final = content(output, "model")
    notes += [f"the final response had {lost}: left out" for lost in final.lost]
    if output.truncated:
        notes.append(
            "the final response was cut to the content length limit "
            f"({sc.CONTENT_MAX_LENGTH_ENV}): complete it"
        )
    return final.json


def _error(record: SpanRecord) -> str:
    kind = record.error_type or "error"
    message = record.status_description
    tool = record.attributes.get(sc.GEN_AI_TOOL_NAME)
    where = f"tool {tool}: " if record.adk_kind == sc.SpanKind.TOOL else ""
    said = message if message and message.startswith(kind) else f"{kind}: {message}"
    text = where + (said if message and message != kind else kind)
    return text if len(text) <= 200 else text[:199] + "…"


def _cut(run: Run, what: str) -> EvalSetError:
    return EvalSetError(
        f"trace {run.trace_id}: {what} in {_which(run)} was cut to the content length limit; "
        f"raise it ({sc.CONTENT_MAX_LENGTH_ENV}, or content_max_length=) to capture it whole, "
        "or leave the run out (--trace-id, --where)"
    )


def _which(run: Run) -> str:
    app = f" of {run.app}" if run.app else ""
    return f"the run{app} (invocation {run.invocation_id or '?'})"


def _safe(text: str, unsafe: re.Pattern[str]) -> str:
    return unsafe.sub("_", text)[:_ID_PART]


def _seconds(ns: int) -> float:
    """Unix seconds, to the microsecond below (so ``--since`` that time includes it)."""
    return ns // 1000 / 1e6
