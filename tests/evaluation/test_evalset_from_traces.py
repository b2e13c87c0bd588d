"""From a bad run to a regression test: ``adk-otel evalset`` turns captured runs
into an ADK eval set, and ADK runs it as it is, offline.

Production runs of the scripted clerk (a classic agent and a graph workflow)
are traced with content capture and written as a collector writes them; the
eval set written from that file is loaded by ADK's own loader and run with
ADK's ``LocalEvalService`` and ``AgentEvaluator``: against the same agent every
case passes (trajectory and response match), against a changed agent that
calls another tool the trajectory fails, and ``compare --fail-on eval`` on the
two eval runs trips. A run that failed in production becomes a case marked
for a person: filled in, it fails on the unfixed agent and passes on the fix."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.evaluation.base_eval_service import (
    EvaluateConfig,
    EvaluateRequest,
    InferenceConfig,
    InferenceRequest,
)
from google.adk.evaluation.eval_metrics import EvalStatus
from google.adk.evaluation.eval_set import EvalSet
from google.adk.evaluation.in_memory_eval_sets_manager import InMemoryEvalSetsManager
from google.adk.evaluation.local_eval_service import LocalEvalService
from google.adk.evaluation.local_eval_sets_manager import load_eval_set_from_file
from google.adk.runners import InMemoryRunner
from google.adk.workflow import Workflow
from google.genai import types
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs

import adk_otel
from adk_otel.cli.main import main
from adk_otel.evaluations import TracedLocalEvalService
from adk_otel.testing.capture import TraceCapture
from adk_otel.testing.model import ScriptedModel, Step, call

from . import evalkit as kit

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

TRAJECTORY, MATCH = "tool_trajectory_avg_score", "response_match_score"
SKUS = [f"A{n}" for n in range(8)]


def search(sku: str) -> dict[str, Any]:
    """Stock level for a SKU, from the search index."""
    return {"sku": sku, "stock": 3}


class Rerouted(kit.Turns):
    """A changed release: asks the search index instead of ``lookup``."""

    def __call__(self, request: Any) -> Step:
        step = super().__call__(request)
        call_part = step.parts[0].function_call if step.parts else None
        if call_part is not None and call_part.name == "lookup":
            return call("search", dict(call_part.args or {}))
        return step


def clerk(turns: kit.Turns | None = None, tools: list[Any] | None = None) -> LlmAgent:
    # An instruction: ADK's eval records each agent's, and fails a workflow's
    # agent node without one (2.13: its request then has no system instruction).
    model = ScriptedModel(choose=turns or kit.Turns())
    return LlmAgent(
        name="clerk",
        model=model,
        instruction="Answer stock questions.",
        tools=tools or [kit.lookup, search],
    )


def flow(turns: kit.Turns | None = None, tools: list[Any] | None = None) -> Workflow:
    return Workflow(name="flow", edges=[("START", clerk(turns, tools))])


async def _production(root: Any, conversations: list[list[str]], capture: TraceCapture) -> None:
    """Each conversation a session of real runs, traced with content capture;
    a run that raises is a failed run, as in production."""
    key = "node" if isinstance(root, Workflow) else "agent"
    runner = adk_otel.instrument(
        InMemoryRunner(**{key: root}, app_name=kit.APP),
        tracer_provider=capture.tracer_provider,
        capture_content=True,
    )
    for turns in conversations:
        session = await runner.session_service.create_session(app_name=kit.APP, user_id="ana")
        for text in turns:
            try:
                async for _ in runner.run_async(
                    user_id="ana", session_id=session.id, new_message=types.UserContent(text)
                ):
                    pass
            except LookupError:
                pass


def _collector_file(folder: Path, root: Any, conversations: list[list[str]]) -> Path:
    capture = TraceCapture()
    asyncio.run(_production(root, conversations, capture))
    folder.mkdir(parents=True, exist_ok=True)
    return capture.save(folder / "traces.json")


def evalset(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["evalset", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _manager(eval_set: EvalSet) -> InMemoryEvalSetsManager:
    manager = InMemoryEvalSetsManager()
    manager.create_eval_set(app_name=kit.APP, eval_set_id=eval_set.eval_set_id)
    for case in eval_set.eval_cases:
        manager.add_eval_case(app_name=kit.APP, eval_set_id=eval_set.eval_set_id, eval_case=case)
    return manager


async def _score(service: Any, eval_set: EvalSet) -> dict[str, dict[str, EvalStatus]]:
    """Each case's overall status per metric (``inference`` when its run failed)."""
    request = InferenceRequest(
        app_name=kit.APP,
        eval_set_id=eval_set.eval_set_id,
        inference_config=InferenceConfig(parallelism=2),
    )
    inferences = [r async for r in service.perform_inference(request)]
    scoring = EvaluateRequest(
        inference_results=inferences,
        evaluate_config=EvaluateConfig(eval_metrics=kit.local_metrics()),
    )
    results = [r async for r in service.evaluate(scoring)]
    return {
        r.eval_id: {m.metric_name: m.eval_status for m in r.overall_eval_metric_results}
        or {"inference": r.final_eval_status}
        for r in results
    }


def run_eval(eval_set: EvalSet, root: Any) -> dict[str, dict[str, EvalStatus]]:
    """ADK's own LocalEvalService, the eval set as ADK loaded it, ``root`` as the agent."""
    service = LocalEvalService(root_agent=root, eval_sets_manager=_manager(eval_set))
    return asyncio.run(_score(service, eval_set))


def _traced_eval(folder: Path, eval_set: EvalSet, root: Any) -> None:
    """The same through adk-otel's service: each case's runs and scores to ``folder``."""
    capture = TraceCapture()
    plugin = adk_otel.AdkOtelPlugin(tracer_provider=capture.tracer_provider)
    app = App(name=kit.APP, root_agent=root, plugins=[plugin])
    service = TracedLocalEvalService(
        root,
        _manager(eval_set),
        **({"app": app} if kit.APP_PLUGINS_IN_EVAL else {}),
        tracer_provider=capture.tracer_provider,
        logger_provider=capture.logger_provider,
    )
    asyncio.run(_score(service, eval_set))
    folder.mkdir()
    capture.save(folder / "traces.json")
    (folder / "logs.json").write_text(
        kit.collector_logs([encode_logs(capture.log_exporter.get_finished_logs())]),
        encoding="utf-8",
    )


PASSED = {TRAJECTORY: EvalStatus.PASSED, MATCH: EvalStatus.PASSED}
REROUTED = {TRAJECTORY: EvalStatus.FAILED, MATCH: EvalStatus.PASSED}


@pytest.fixture(scope="module", params=["classic", "workflow"])
def production(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A day of production: eight one-turn sessions and one of two turns."""
    root = flow if request.param == "workflow" else clerk
    folder = tmp_path_factory.mktemp(request.param)
    conversations = [[f"sku {sku}"] for sku in SKUS] + [["sku A1", "hello"]]
    return request.param, root, _collector_file(folder / "otel-output", root(), conversations)


def test_runs_become_an_eval_set_adk_runs_passing_then_failing_on_a_changed_tool(
    production, tmp_path, capsys
) -> None:
    kind, root, traces = production
    out = tmp_path / "stock_checks.evalset.json"
    code, report, err = evalset(capsys, str(traces), "-o", str(out))
    assert code == 0, err
    assert report.startswith(
        f"adk-otel evalset: wrote 9 case(s), 10 invocation(s) (10 run(s) selected) to {out}"
    )
    loaded = load_eval_set_from_file(str(out), "ignored")  # ADK's loader, as adk eval reads it
    assert loaded.eval_set_id == "stock_checks"
    assert len(loaded.eval_cases) == 9
    by_length = sorted(loaded.eval_cases, key=lambda case: len(case.conversation or []))
    two_turns = by_length[-1]
    first, second = two_turns.conversation or []
    assert first.user_content.parts[0].text == "sku A1"
    assert [(c.name, c.args) for c in first.intermediate_data.tool_uses] == [
        ("lookup", {"sku": "A1"})
    ]
    assert [r.response for r in first.intermediate_data.tool_responses] == [
        {"sku": "A1", "stock": 3}
    ]
    assert first.final_response.parts[0].text == "in stock"
    assert second.user_content.parts[0].text == "hello"
    assert not second.intermediate_data.tool_uses
    assert second.final_response.parts[0].text == "hello, how can I help"
    assert two_turns.session_input.app_name == kit.APP
    assert two_turns.session_input.user_id == "ana"
    assert two_turns.eval_id.startswith(f"{kit.APP}-")
    assert two_turns.eval_id.endswith(first.invocation_id)
    # The same traces give the same file.
    again = tmp_path / "again.evalset.json"
    evalset(capsys, str(traces), "-o", str(again), "--set-id", "stock_checks")
    assert again.read_bytes() == out.read_bytes()

    assert run_eval(loaded, root()) == {case.eval_id: PASSED for case in loaded.eval_cases}
    changed = root(Rerouted())
    assert run_eval(loaded, changed) == {case.eval_id: REROUTED for case in loaded.eval_cases}
    if kind == "workflow":
        return  # the gate over traced eval runs: once is enough
    _traced_eval(tmp_path / "baseline", loaded, root())
    _traced_eval(tmp_path / "changed", loaded, root(Rerouted()))
    code = main(
        ["compare", str(tmp_path / "baseline"), str(tmp_path / "changed"), "--fail-on", "eval"]
    )
    compared = capsys.readouterr()
    if not kit.APP_PLUGINS_IN_EVAL:
        # ADK 2.5 runs no App plugin in an eval: no traced run to judge.
        assert code == 2 and "logs only, no traces" in compared.err
        return
    assert code == 1, compared.out
    assert f"TRIPPED eval: {kit.APP}: eval {TRAJECTORY} pass rate" in compared.out


def test_a_case_replays_the_sessions_state_the_run_started_with(tmp_path, capsys) -> None:
    """An agent whose instruction reads the session's state: ADK cannot even
    build its request without it, so the case must carry the state the
    production run started with."""

    def stateful(turns: kit.Turns | None = None) -> LlmAgent:
        model = ScriptedModel(choose=turns or kit.Turns())
        instruction = "Answer stock questions for store {store}."
        return LlmAgent(name="clerk", model=model, instruction=instruction, tools=[kit.lookup])

    async def production(capture: TraceCapture) -> None:
        runner = adk_otel.instrument(
            InMemoryRunner(agent=stateful(), app_name=kit.APP),
            tracer_provider=capture.tracer_provider,
            capture_content=True,
        )
        session = await runner.session_service.create_session(
            app_name=kit.APP, user_id="ana", state={"store": "north"}
        )
        async for _ in runner.run_async(
            user_id="ana", session_id=session.id, new_message=types.UserContent("sku A1")
        ):
            pass

    capture = TraceCapture()
    asyncio.run(production(capture))
    traces = capture.save(tmp_path / "traces.json")
    out = tmp_path / "stateful.evalset.json"
    code, _, err = evalset(capsys, str(traces), "-o", str(out))
    assert code == 0, err
    loaded = load_eval_set_from_file(str(out), "ignored")
    [case] = loaded.eval_cases
    assert case.session_input.state == {"store": "north"}
    assert run_eval(loaded, stateful()) == {case.eval_id: PASSED}
    stateless = loaded.model_copy(deep=True)
    stateless.eval_cases[0].session_input.state = {}
    # Without it the run fails before the model is asked (the instruction's {store}).
    assert run_eval(stateless, stateful()) == {case.eval_id: {"inference": EvalStatus.FAILED}}


def test_agent_evaluator_runs_the_written_file_as_it_is(tmp_path, capsys) -> None:
    """``AgentEvaluator.evaluate`` over the file itself (its own loader and
    criteria file), against the agent module's clerk: every case passes."""
    from google.adk.evaluation.agent_evaluator import AgentEvaluator

    from .evaluated import agent as module

    traces = _collector_file(tmp_path / "otel-output", clerk(), [["sku A1", "hello"], ["sku A2"]])
    [plugin] = module.app.plugins
    plugin.configure(tracer_provider=TraceCapture().tracer_provider)
    out = tmp_path / "checks.test.json"
    assert evalset(capsys, str(traces), "-o", str(out))[0] == 0
    (tmp_path / "test_config.json").write_text(
        json.dumps({"criteria": {TRAJECTORY: 1.0, MATCH: 0.8}}), encoding="utf-8"
    )
    asyncio.run(
        AgentEvaluator.evaluate(module.__name__, str(out), num_runs=1, print_detailed_results=False)
    )


class BuggyLookupFailed(LookupError):
    pass


def buggy_lookup(sku: str) -> dict[str, Any]:
    """Stock level for a SKU (the release with the bug: Q-series SKUs crash it)."""
    if sku.startswith("Q"):
        raise BuggyLookupFailed(f"no shelf for {sku}")
    return {"sku": sku, "stock": 3}


buggy_lookup.__name__ = "lookup"


def test_a_failed_run_becomes_a_case_a_person_completes_then_it_guards_the_fix(
    tmp_path, capsys
) -> None:
    traces = _collector_file(
        tmp_path / "otel-output",
        clerk(tools=[buggy_lookup, search]),
        [["sku A1"], ["sku A2", "sku Q7"]],
    )
    out = tmp_path / "incident.evalset.json"
    code, report, err = evalset(capsys, str(traces), "--where", "outcome=error", "-o", str(out))
    assert code == 0, err
    # The session with the failed run, both its turns; the other session left out.
    assert "wrote 1 case(s), 2 invocation(s) (1 run(s) selected)" in report
    assert "1 of 1 case(s) need a person before adk eval runs them" in report
    assert len(report.splitlines()) == 2  # the notes are in the file, one line says so
    assert "conversation[1]: the run ended error (tool lookup: " in report
    assert "BuggyLookupFailed: no shelf for Q7" in report
    document = json.loads(out.read_text())
    [case] = document["eval_cases"]
    turn = case["conversation"][1]
    assert "final_response" not in turn  # nothing made up
    assert turn["user_content"]["parts"] == [{"text": "sku Q7"}]
    # The trajectory up to the failure: the call, no response.
    assert [(c["name"], c["args"]) for c in turn["intermediate_data"]["tool_uses"]] == [
        ("lookup", {"sku": "Q7"})
    ]
    assert turn["intermediate_data"]["tool_responses"] == []
    [note] = case["adk_otel"]["todo"]
    assert f"(first: {note})" in report  # the file holds the notes; the line quotes the first
    loaded = EvalSet.model_validate(document)  # ADK's model takes it as written
    # Not filled in, it never passes, even on the fixed agent: no answer matches none.
    fixed = clerk()
    [unfilled] = run_eval(loaded, fixed).values()
    assert unfilled == {TRAJECTORY: EvalStatus.PASSED, MATCH: EvalStatus.FAILED}

    # The person writes the answer the agent should give (docs/evaluations.md).
    turn["final_response"] = {"role": "model", "parts": [{"text": "in stock"}]}
    completed = EvalSet.model_validate(document)
    [on_the_bug] = run_eval(completed, clerk(tools=[buggy_lookup, search])).values()
    assert on_the_bug != PASSED
    [on_the_fix] = run_eval(completed, fixed).values()
    assert on_the_fix == PASSED
