"""``adk-otel evalset``: which runs it takes, what it cannot know, bad and hostile input.

Real runs of a scripted agent, traced with content capture, written as a
collector writes them; every eval set written is checked with ADK's own
``EvalSet`` model. (ADK running the cases: tests/evaluation/test_evalset_from_traces.py.)
"""

from __future__ import annotations

import asyncio
import io
import json
import tempfile
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from google.adk.agents import LlmAgent, SequentialAgent
from google.adk.evaluation.eval_set import EvalSet
from google.adk.runners import InMemoryRunner
from google.genai import types
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.resources import SERVICE_NAME, Resource

from adk_otel import semconv as sc
from adk_otel.cli.main import main
from adk_otel.testing import ScriptedModel, call, reply
from adk_otel.testing.capture import TraceCapture
from adk_otel.testing.model import Step

from .test_bounded import gzip_bomb, one_line_exit_2, run_bounded

APP = "shop"


def lookup(sku: str) -> dict[str, Any]:
    """Stock level for a SKU."""
    return {"sku": sku, "stock": 3}


def charge(amount: float) -> dict[str, Any]:
    """Charges the card (declines large amounts)."""
    if amount > 100:
        raise ValueError(f"card declined for {amount}")
    return {"charged": amount}


def _step(request: Any) -> Step:
    """``sku X`` looks X up, ``pay N`` charges N, anything else is answered."""
    contents = request.contents or []
    last = contents[-1] if contents else None
    if last is not None and any(p.function_response for p in last.parts or []):
        return reply("done")
    user = [c for c in contents if c.role == "user" and c.parts and c.parts[0].text]
    text = user[-1].parts[0].text if user else ""
    word, _, value = text.partition(" ")
    if word == "sku":
        return call("lookup", {"sku": value})
    if word == "pay":
        return call("charge", {"amount": float(value)})
    return reply(f"you said {text}")


async def _runs(capture: TraceCapture, sessions: dict[str, list[str]], **options: Any) -> None:
    agent = LlmAgent(name="clerk", model=ScriptedModel(choose=_step), tools=[lookup, charge])
    runner = capture.instrument(InMemoryRunner(agent=agent, app_name=APP), **options)
    for user, turns in sessions.items():
        session = await runner.session_service.create_session(app_name=APP, user_id=user)
        for text in turns:
            try:
                async for _ in runner.run_async(
                    user_id=user, session_id=session.id, new_message=types.UserContent(text)
                ):
                    pass
            except ValueError:
                pass


def traces_of(path: Path, sessions: dict[str, list[str]], **options: Any) -> Path:
    capture = TraceCapture()
    asyncio.run(_runs(capture, sessions, **options))
    return capture.save(path)


SESSIONS = {"ana": ["sku A1", "pay 500"], "bo": ["sku B2"], "cy": ["hello", "pay 5"]}


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("runs") / "traces.json"
    return traces_of(path, SESSIONS, capture_content=True)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["evalset", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def written(capsys: pytest.CaptureFixture[str], *argv: str) -> EvalSet:
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    return EvalSet.model_validate_json(out)


def users(eval_set: EvalSet) -> list[str]:
    return [case.session_input.user_id for case in eval_set.eval_cases]


def texts(eval_set: EvalSet) -> list[list[str]]:
    return [[i.user_content.parts[0].text for i in c.conversation] for c in eval_set.eval_cases]


def test_selection_by_the_runs_outcome_tools_agent_user_and_failure(traces, capsys) -> None:
    every = written(capsys, str(traces))
    assert users(every) == ["ana", "bo", "cy"]
    assert texts(every) == [["sku A1", "pay 500"], ["sku B2"], ["hello", "pay 5"]]
    failed = written(capsys, str(traces), "--where", "outcome=error")
    assert users(failed) == ["ana"] and texts(failed) == [["sku A1", "pay 500"]]
    for where in ("failed_tool=charge", "error=ValueError", "category=tool_exception"):
        assert users(written(capsys, str(traces), "--where", where)) == ["ana"], where
    assert users(written(capsys, str(traces), "--where", "tool=charge")) == ["ana", "cy"]
    # A key again allows another value; different keys must all hold.
    assert users(written(capsys, str(traces), "--where", "user=bo", "--where", "user=cy")) == [
        "bo",
        "cy",
    ]
    both = written(capsys, str(traces), "--where", "tool=charge", "--where", "outcome=ok")
    assert users(both) == ["cy"]
    assert users(written(capsys, str(traces), "--where", "agent=clerk", "--limit", "2")) == [
        "ana",
        "bo",
    ]
    assert users(written(capsys, str(traces), "--where", f"app={APP}")) == ["ana", "bo", "cy"]
    session = every.eval_cases[1].model_extra["adk_otel"]["session_id"]
    assert users(written(capsys, str(traces), "--where", f"session={session}")) == ["bo"]
    trace_id = every.eval_cases[2].model_extra["adk_otel"]["trace_ids"][1]
    by_trace = written(capsys, str(traces), "--trace-id", trace_id, "--per", "invocation")
    assert texts(by_trace) == [["pay 5"]]
    # The service name the SDK gives a process without one (its format changed in 1.45).
    unnamed = str(Resource.create().attributes[SERVICE_NAME])
    assert users(written(capsys, str(traces), "--service", unnamed)) == users(every)


def test_per_invocation_and_time_range(traces, capsys) -> None:
    per_run = written(capsys, str(traces), "--per", "invocation")
    assert texts(per_run) == [["sku A1"], ["pay 500"], ["sku B2"], ["hello"], ["pay 5"]]
    ids = [case.eval_id for case in per_run.eval_cases]
    assert len(set(ids)) == 5
    for case in per_run.eval_cases:
        assert case.eval_id.endswith(case.conversation[0].invocation_id)
    starts = [case.creation_timestamp for case in per_run.eval_cases]
    from datetime import UTC, datetime

    def iso(seconds: float) -> str:
        return datetime.fromtimestamp(seconds, tz=UTC).isoformat()

    window = written(
        capsys,
        str(traces),
        "--per",
        "invocation",
        "--since",
        iso(starts[2]),
        "--until",
        iso(starts[4]),
    )
    assert texts(window) == [["sku B2"], ["hello"]]
    code, _, err = run(capsys, str(traces), "--since", "2999-01-01")
    assert code == 2 and err.startswith("adk-otel: error: no run matches --since 2999-01-01T00")


def test_a_failed_run_is_marked_and_the_set_is_described(traces, capsys, tmp_path) -> None:
    code, out, err = run(capsys, str(traces), "--where", "outcome=error")
    assert code == 0
    assert err == "adk-otel: 1 of 1 cases need a person: see their adk_otel.todo\n"
    document = json.loads(out)
    assert document["eval_set_id"] == f"{APP}_from_traces"
    assert document["description"] == (
        "1 case(s) from 2 traced run(s), selected by --where outcome=error (adk-otel evalset)"
    )
    [case] = document["eval_cases"]
    assert case["adk_otel"]["todo"] == [
        "conversation[1]: the run ended error (tool charge: ValueError: card declined for "
        "500.0): it has no final response to expect; write the answer the agent should give "
        "as final_response"
    ]
    first, failed = case["conversation"]
    assert first["final_response"] == {"role": "model", "parts": [{"text": "done"}]}
    assert "final_response" not in failed
    assert failed["intermediate_data"]["tool_uses"][0]["args"] == {"amount": 500.0}
    given = written(capsys, str(traces), "--set-id", "nightly_2", "--description", "from prod")
    assert (given.eval_set_id, given.description) == ("nightly_2", "from prod")


async def _answered_then_failed(capture: TraceCapture) -> None:
    """One run of a sequential agent: the greeter answers, then the payer's tool raises."""
    greeter = LlmAgent(name="greeter", model=ScriptedModel(script=[reply("hello there")]))
    payer = LlmAgent(
        name="payer",
        model=ScriptedModel(script=[call("charge", {"amount": 500.0})]),
        tools=[charge],
    )
    desk = SequentialAgent(name="desk", sub_agents=[greeter, payer])
    runner = capture.instrument(InMemoryRunner(agent=desk, app_name=APP), capture_content=True)
    session = await runner.session_service.create_session(app_name=APP, user_id="ana")
    with pytest.raises(ValueError, match="card declined"):
        async for _ in runner.run_async(
            user_id="ana", session_id=session.id, new_message=types.UserContent("pay 500")
        ):
            pass


def test_a_failed_run_that_answered_before_it_failed_has_no_final_response(
    tmp_path, capsys
) -> None:
    capture = TraceCapture()
    asyncio.run(_answered_then_failed(capture))
    [invocation] = capture.query().kind("invocation")
    # The trace holds an answer (the greeter's), and the run's outcome: error.
    assert "hello there" in str(invocation.attributes[sc.GEN_AI_OUTPUT_MESSAGES])
    assert invocation.attributes[sc.ADK_OUTCOME] == sc.Outcome.ERROR
    code, out, err = run(capsys, str(capture.save(tmp_path / "traces.json")))
    assert code == 0, err
    [case] = json.loads(out)["eval_cases"]
    [turn] = case["conversation"]
    assert "final_response" not in turn, turn["final_response"]
    assert case["adk_otel"]["todo"] == [
        "conversation[0]: the run ended error (tool charge: ValueError: card declined for "
        "500.0): it has no final response to expect; write the answer the agent should give "
        "as final_response"
    ]
    assert turn["intermediate_data"]["tool_uses"][0]["args"] == {"amount": 500.0}


def test_a_run_without_content_is_one_error_naming_the_setting(tmp_path, capsys) -> None:
    bare = traces_of(tmp_path / "bare.json", {"ana": ["sku A1"]})
    code, out, err = run(capsys, str(bare))
    assert (code, out) == (2, "")
    assert err.count("\n") == 1
    assert "was captured without content" in err
    assert f"{sc.CONTENT_CAPTURE_ENV}=SPAN_ONLY" in err and "capture_content=True" in err


def test_content_in_span_events_reads_the_same(traces, tmp_path, capsys) -> None:
    events = traces_of(tmp_path / "events.json", SESSIONS, capture_content="EVENT_ONLY")
    from_events = written(capsys, str(events), "--per", "invocation")
    from_attributes = written(capsys, str(traces), "--per", "invocation")
    assert [c.conversation for c in from_events.eval_cases] != []
    assert texts(from_events) == texts(from_attributes)
    assert [
        [(u.name, u.args) for u in c.conversation[0].intermediate_data.tool_uses]
        for c in from_events.eval_cases
    ] == [
        [(u.name, u.args) for u in c.conversation[0].intermediate_data.tool_uses]
        for c in from_attributes.eval_cases
    ]


def test_redacted_content_stays_redacted(tmp_path, capsys) -> None:
    def redact(key: str, value: str) -> str | None:
        if key == sc.GEN_AI_TOOL_CALL_RESULT:
            return "[withheld]"  # the whole value: no longer JSON
        return value.replace("A1", "[sku]")

    path = traces_of(tmp_path / "r.json", {"ana": ["sku A1"]}, capture_content=True, redact=redact)
    [case] = written(capsys, str(path)).eval_cases
    [invocation] = case.conversation
    assert invocation.user_content.parts[0].text == "sku [sku]"
    [use] = invocation.intermediate_data.tool_uses
    assert use.args == {"sku": "[sku]"}
    [response] = invocation.intermediate_data.tool_responses
    assert response.response == {"result": "[withheld]"}
    assert "A1" not in (tmp_path / "r.json").read_text()  # nothing to leak back


def test_a_cut_message_is_an_error_naming_the_length_setting(tmp_path, capsys) -> None:
    path = traces_of(
        tmp_path / "c.json",
        {"ana": ["sku A1 " + "x" * 50]},
        capture_content=True,
        content_max_length=30,
    )
    code, out, err = run(capsys, str(path))
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert "the user's message in the run of shop" in err and sc.CONTENT_MAX_LENGTH_ENV in err


async def _stateful_runs(
    capture: TraceCapture, state: dict[str, Any], deltas: list[dict[str, Any]], **options: Any
) -> None:
    """One session made with ``state``, a turn per state delta sent with its message."""
    agent = LlmAgent(name="clerk", model=ScriptedModel(choose=_step), tools=[lookup, charge])
    runner = capture.instrument(InMemoryRunner(agent=agent, app_name=APP), **options)
    session = await runner.session_service.create_session(app_name=APP, user_id="ana", state=state)
    for delta in deltas:
        async for _ in runner.run_async(
            user_id="ana",
            session_id=session.id,
            new_message=types.UserContent("sku A1"),
            state_delta=delta,
        ):
            pass


def stateful_traces(
    path: Path, state: dict[str, Any], deltas: list[dict[str, Any]], **options: Any
) -> Path:
    capture = TraceCapture()
    asyncio.run(_stateful_runs(capture, state, deltas, capture_content=True, **options))
    return capture.save(path)


def test_the_case_starts_from_the_sessions_state_as_its_first_run_did(tmp_path, capsys) -> None:
    """The state a replay needs: the session's as each run started (the message's
    state delta applied, ``temp:`` keys left out); per session the first run's."""
    state = {"store": "north", "user:tier": "gold", "basket": ["A1", 2]}
    deltas = [{"visit": 1, "temp:scratch": "x"}, {"visit": 2}]
    path = stateful_traces(tmp_path / "s.json", state, deltas)
    [case] = written(capsys, str(path)).eval_cases
    assert case.session_input.state == {**state, "visit": 1}
    first, second = written(capsys, str(path), "--per", "invocation").eval_cases
    assert first.session_input.state == {**state, "visit": 1}
    assert second.session_input.state == {**state, "visit": 2}


def test_no_state_without_content_capture_and_none_for_an_empty_one(tmp_path) -> None:
    capture = TraceCapture()
    asyncio.run(_stateful_runs(capture, {"store": "north"}, [{}]))
    asyncio.run(_stateful_runs(capture, {}, [{}], capture_content=True))
    runs = [s for s in capture.spans if s.attributes.get(sc.ADK_SPAN_KIND) == "invocation"]
    assert len(runs) == 2
    assert not [s for s in capture.spans if sc.ADK_SESSION_STATE in s.attributes]


@pytest.mark.parametrize(
    ("options", "note"),
    [
        ({"content_max_length": 120}, "the session's state was cut to the content length limit"),
        (
            {"redact": lambda key, value: "[state]" if key == sc.ADK_SESSION_STATE else value},
            "the session's state is not a JSON object as recorded",
        ),
    ],
)
def test_a_state_that_cannot_be_replayed_is_left_empty_for_a_person(
    tmp_path, capsys, options: dict[str, Any], note: str
) -> None:
    path = stateful_traces(tmp_path / "s.json", {"notes": "x" * 300}, [{}], **options)
    code, out, err = run(capsys, str(path))
    assert code == 0, err
    document = json.loads(out)
    [case] = document["eval_cases"]
    assert case["session_input"]["state"] == {}
    assert [line for line in case["adk_otel"]["todo"] if line.startswith("session_input.state: ")]
    assert note in "\n".join(case["adk_otel"]["todo"])
    EvalSet.model_validate(document)


class Unprintable:
    """A state value no serializer can print."""

    def __str__(self) -> str:
        raise RuntimeError("not printable")

    __repr__ = __str__


state_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=20)
    | st.binary(max_size=8)
    | st.builds(Unprintable),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=10,
)


@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(state=st.dictionaries(st.text(max_size=10), state_values, max_size=4))
def test_any_state_leaves_the_run_whole_and_gives_a_case_adk_accepts(state: dict[str, Any]) -> None:
    capture = TraceCapture()
    asyncio.run(_stateful_runs(capture, state, [{}], capture_content=True))
    [run_span] = [s for s in capture.spans if s.attributes.get(sc.ADK_SPAN_KIND) == "invocation"]
    assert run_span.attributes[sc.ADK_OUTCOME] == "ok"
    with tempfile.TemporaryDirectory() as directory:
        path = capture.save(Path(directory) / "traces.json")
        code, out, err = _main("evalset", str(path))
    assert code == 0, err
    [case] = EvalSet.model_validate_json(out).eval_cases
    kept = [key for key in state if not key.startswith("temp:")]
    assert list(case.session_input.state) == kept  # each value as JSON could write it


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--where", "outcome"], "--where 'outcome': expected KEY=VALUE"),
        (["--where", "colour=red"], "unknown key 'colour'; known: outcome, category"),
        (["--where", "outcome=bad"], "outcome is one of ok, error, cancelled"),
        (["--since", "yesterday"], "--since 'yesterday': not an ISO 8601 date or time"),
        (["--since", "2026-02-01", "--until", "2026-01-01"], "--until must be later than"),
        (["--set-id", "my set"], "--set-id 'my set': an eval set id is letters, digits and _"),
        (["--trace-id", "xyz"], "--trace-id 'xyz': a trace id is 32 hex digits"),
        (["--where", "user=nobody"], "no run matches --where user=nobody (5 runs read; user"),
    ],
)
def test_bad_arguments_are_one_line(traces, capsys, argv: list[str], message: str) -> None:
    code, out, err = run(capsys, str(traces), *argv)
    assert (code, out) == (2, "")
    assert err.startswith("adk-otel: error: ") and err.count("\n") == 1
    assert message in err, err


def test_an_unwritable_output_and_no_run_at_all(traces, tmp_path, capsys) -> None:
    code, _, err = run(capsys, str(traces), "-o", str(tmp_path / "missing" / "x.evalset.json"))
    assert code == 2 and "cannot write" in err
    spans = tmp_path / "not-adk.json"
    spans.write_text(
        '{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736",'
        '"spanId":"00f067aa0ba902b7","name":"x","startTimeUnixNano":"1","endTimeUnixNano":"2"}]}]}]}\n'
    )
    code, _, err = run(capsys, str(spans))
    assert code == 2 and err == "adk-otel: error: no ADK run in the input (no invocation span)\n"


# -- hostile input --------------------------------------------------------------


def _span(span_id: int, name: str, attributes: dict[str, Any], parent: int | None) -> Any:
    return {
        "traceId": "ab" * 16,
        "spanId": f"{span_id:016x}",
        **({"parentSpanId": f"{parent:016x}"} if parent else {}),
        "name": name,
        "startTimeUnixNano": str(span_id),
        "endTimeUnixNano": str(span_id + 1),
        "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items()],
    }


def _document(spans: list[dict[str, Any]]) -> str:
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}) + "\n"


def _main(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with mock.patch("sys.stdout", out), mock.patch("sys.stderr", err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


values = st.one_of(
    st.text(max_size=80),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=10),
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
        ),
        max_leaves=12,
    ).map(json.dumps),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    user=values,
    state=values,
    output=values,
    arguments=values,
    result=values,
    outcome=st.sampled_from(["ok", "error", "paused", "x"]),
    ids=st.tuples(st.text(max_size=20), st.text(max_size=20), st.text(max_size=20)),
)
def test_any_captured_values_give_an_eval_set_adk_accepts_or_one_line(
    user: str,
    state: str,
    output: str,
    arguments: str,
    result: str,
    outcome: str,
    ids: tuple[str, str, str],
) -> None:
    app, session, invocation = ids
    common = {sc.ADK_INVOCATION_ID: invocation, sc.ADK_OUTCOME: outcome}
    invocation_span = {
        sc.ADK_SPAN_KIND: "invocation",
        sc.ADK_APP_NAME: app,
        sc.GEN_AI_CONVERSATION_ID: session,
        sc.GEN_AI_INPUT_MESSAGES: user,
        sc.ADK_SESSION_STATE: state,
        sc.GEN_AI_OUTPUT_MESSAGES: output,
        **common,
    }
    tool_span = {
        sc.ADK_SPAN_KIND: "tool",
        sc.GEN_AI_TOOL_NAME: "t",
        sc.GEN_AI_TOOL_CALL_ARGUMENTS: arguments,
        sc.GEN_AI_TOOL_CALL_RESULT: result,
        **common,
    }
    spans = [
        _span(1, "invocation x", invocation_span, None),
        _span(2, "execute_tool t", tool_span, 1),
    ]
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "traces.json"
        path.write_text(_document(spans), encoding="utf-8")
        code, out, err = _main("evalset", str(path))
    assert code in (0, 2), err
    if code == 2:
        assert out == "" and err.startswith("adk-otel: error: ") and err.count("\n") == 1
        return
    eval_set = EvalSet.model_validate_json(out)
    [case] = eval_set.eval_cases
    assert case.eval_id and "/" not in case.eval_id
    assert isinstance(case.session_input.state, dict)
    # A run that did not end ok has no answer to expect, whatever output it recorded.
    [turn] = case.conversation
    todo = (case.model_extra or {}).get("adk_otel", {}).get("todo", [])
    if outcome != sc.Outcome.OK:
        assert turn.final_response is None, (outcome, turn.final_response)
        assert any("it has no final response to expect" in note for note in todo), todo
    elif turn.final_response is None:
        assert any("write the answer the agent should give" in note for note in todo), todo


def test_hostile_files_are_bounded_and_one_line(tmp_path) -> None:
    line = tmp_path / "line.gz"  # one 1 GiB line
    line.write_bytes(gzip_bomb(b'{"resourceSpans": "' + b"x" * (8 << 20), 128))
    one_line_exit_2(run_bounded("evalset", str(line)), "line 1: longer than allowed")

    # 20,000 runs nested each in the one before, and a message nested 100,000 deep.
    def attributes_of(i: int) -> dict[str, Any]:
        message = "[" * 100_000 if i == 0 else "x"
        return {
            sc.ADK_SPAN_KIND: "invocation",
            sc.ADK_INVOCATION_ID: f"e-{i}",
            sc.GEN_AI_INPUT_MESSAGES: message,
        }

    chain = [_span(i + 1, "invocation x", attributes_of(i), i or None) for i in range(20_000)]
    path = tmp_path / "chain.json"
    path.write_text(_document(chain), encoding="utf-8")
    code, out, err, took = run_bounded("evalset", str(path))
    assert code == 0, err
    assert err == "adk-otel: 1 of 1 cases need a person: see their adk_otel.todo\n"  # no outcome
    [case] = json.loads(out)["eval_cases"]  # the nested runs are the top run's tool work
    assert case["conversation"][0]["user_content"]["parts"][0]["text"].startswith("[[[")
    assert took < 60


def test_the_help_lists_the_keys_and_exit_codes(capsys) -> None:
    assert main(["evalset", "--help"]) == 0
    out = capsys.readouterr().out
    assert "failed_tool  the run's call of this tool failed" in out
    assert "Exit codes: 0 written, 2 unusable input" in out
    assert "--max-document-mb MB" in out
    assert main(["--help"]) == 0
    assert "evalset" in capsys.readouterr().out


def test_writing_an_eval_set_imports_no_adk(traces) -> None:
    import subprocess
    import sys

    script = (
        "import sys, io, contextlib; from adk_otel.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()): code = main(['evalset', sys.argv[1]])\n"
        "adk = ('google.adk', 'adk_otel.plugin')\n"
        "print(code, sorted(m for m in sys.modules if m.startswith(adk)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(traces)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.splitlines()[-1] == "0 []"


def test_a_clickhouse_store_gives_the_same_eval_set(traces, tmp_path, capsys) -> None:
    """The runs loaded into an embedded store (the Collector exporter's table:
    attributes as strings) make the same cases as the file they came from."""
    store = f"chdb:{tmp_path / 'store'}"
    assert main(["load", str(traces), "--into", store]) == 0
    capsys.readouterr()
    for argv in (["--per", "invocation"], ["--where", "outcome=error"], []):
        from_file = run(capsys, str(traces), *argv)
        assert from_file[0] == 0, from_file[2]
        assert run(capsys, store, *argv) == from_file
    assert run(capsys, store, "--service", "elsewhere")[0] == 2
