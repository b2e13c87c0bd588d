"""ADK's evaluation under adk-otel: a real eval set over a scripted-model
agent, cases run concurrently as ADK runs them, scored with the local metrics
and an LLM-judged one (a scripted judge). One whole, labelled trace per case
invocation, each metric's result an event in its invocation span's context."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections import Counter
from typing import Any

import pytest
from google.adk.evaluation.base_eval_service import (
    EvaluateConfig,
    EvaluateRequest,
    InferenceConfig,
    InferenceRequest,
)
from google.adk.evaluation.eval_metrics import EvalStatus
from google.adk.evaluation.local_eval_service import LocalEvalService

import adk_otel
from adk_otel import semconv as sc
from adk_otel.evaluations import (
    INFERENCE_FAILED,
    TracedEvalSetResultsManager,
    TracedLocalEvalService,
    record_eval_results,
)

from . import evalkit as kit

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


async def infer_and_score(service: Any, metrics: list[Any], parallelism: int = 4) -> list[Any]:
    request = InferenceRequest(
        app_name=kit.APP,
        eval_set_id=kit.SET,
        inference_config=InferenceConfig(parallelism=parallelism),
    )
    inferences = [r async for r in service.perform_inference(request)]
    scoring = EvaluateRequest(
        inference_results=inferences, evaluate_config=EvaluateConfig(eval_metrics=metrics)
    )
    return [r async for r in service.evaluate(scoring)]


def traced_service(
    telemetry: kit.Telemetry, cases: dict[str, Any], turns: kit.Turns | None = None, **options: Any
) -> Any:
    root = kit.agent(turns)
    plugin = adk_otel.AdkOtelPlugin(tracer_provider=telemetry.tracer_provider)
    return TracedLocalEvalService(
        root,
        kit.eval_set(cases),
        **kit.app_with(plugin, root),
        logger_provider=telemetry.logger_provider,
        tracer_provider=telemetry.tracer_provider,
        **options,
    )


def status_label(status: EvalStatus) -> str | None:
    return {EvalStatus.PASSED: "pass", EvalStatus.FAILED: "fail"}.get(status)


def assert_whole(telemetry: kit.Telemetry) -> None:
    """Every span ended once, ok, in its invocation's trace, its parent in it."""
    spans = telemetry.finished()
    ids = Counter(s.context.span_id for s in spans)
    assert max(ids.values()) == 1
    by_id = {s.context.span_id: s for s in spans}
    for span in spans:
        assert span.attributes.get(sc.ADK_OUTCOME) == "ok", (span.name, dict(span.attributes))
        if span.name.startswith("invocation "):
            assert span.parent is None
            continue
        parent = by_id[span.parent.span_id]
        assert parent.context.trace_id == span.context.trace_id
        assert span.end_time <= parent.end_time
    assert {s.name for s in spans} == {
        "invocation EvaluationGenerator",
        "invoke_agent clerk",
        "generate_content scripted-model",
        "execute_tool lookup",
    }, "ADK's eval plugins added spans of their own"


async def test_each_case_invocation_is_one_labelled_trace_with_its_scores():
    telemetry = kit.telemetry()
    service = traced_service(telemetry, kit.STANDARD)
    results = await infer_and_score(service, kit.local_metrics())
    if not kit.APP_PLUGINS_IN_EVAL:
        kit.assert_scored_without_traces(telemetry, results)
        return

    # Labels: one trace per invocation, carrying its set, case and index.
    invocations = telemetry.invocations()
    expected = {(case, i) for case, turns in kit.STANDARD.items() for i in range(len(turns))}
    labelled = {
        (s.attributes[sc.ADK_EVAL_CASE_ID], s.attributes[sc.ADK_EVAL_INVOCATION_INDEX])
        for s in invocations
    }
    assert labelled == expected and len(invocations) == len(expected)
    assert {s.attributes[sc.ADK_EVAL_SET_ID] for s in invocations} == {kit.SET}
    assert len({s.context.trace_id for s in invocations}) == len(expected)
    assert_whole(telemetry)

    # Scores: ADK's own, one event per metric per invocation and per case,
    # in the context of the invocation span each judges.
    span_of = {s.attributes[sc.ADK_INVOCATION_ID]: s for s in invocations}
    events = telemetry.results()
    by_key = {
        (
            e.attributes[sc.ADK_EVAL_CASE_ID],
            e.attributes[sc.ADK_EVAL_SCOPE],
            e.attributes.get(sc.ADK_EVAL_INVOCATION_INDEX),
            e.attributes[sc.GEN_AI_EVALUATION_NAME],
        ): e
        for e in events
    }
    assert len(by_key) == len(events)
    seen = 0
    for result in results:
        per = result.eval_metric_result_per_invocation
        for index, invocation in enumerate(per):
            span = span_of[invocation.actual_invocation.invocation_id]
            assert span.attributes[sc.ADK_EVAL_INVOCATION_INDEX] == index
            for metric in invocation.eval_metric_results:
                event = by_key[(result.eval_id, "invocation", index, metric.metric_name)]
                assert event.trace_id == span.context.trace_id
                assert event.span_id == span.context.span_id
                assert event.attributes[sc.GEN_AI_EVALUATION_SCORE_VALUE] == metric.score
                assert event.attributes[sc.GEN_AI_EVALUATION_SCORE_LABEL] == status_label(
                    metric.eval_status
                )
                assert event.attributes[sc.ADK_EVAL_SET_ID] == kit.SET
                seen += 1
        last = span_of[per[-1].actual_invocation.invocation_id]
        for metric in result.overall_eval_metric_results:
            event = by_key[(result.eval_id, "case", None, metric.metric_name)]
            assert (event.trace_id, event.span_id) == (last.context.trace_id, last.context.span_id)
            assert event.attributes[sc.GEN_AI_EVALUATION_SCORE_LABEL] == status_label(
                metric.eval_status
            )
            assert event.attributes[sc.ADK_EVAL_THRESHOLD] == metric.threshold
            seen += 1
    assert seen == len(events) == 2 * (5 + 4)  # 5 invocations, 4 cases, 2 metrics

    # The seeded failures are what ADK says they are.
    case_labels = {
        (e.attributes[sc.ADK_EVAL_CASE_ID], e.attributes[sc.GEN_AI_EVALUATION_NAME]): e.attributes[
            sc.GEN_AI_EVALUATION_SCORE_LABEL
        ]
        for e in events
        if e.attributes[sc.ADK_EVAL_SCOPE] == "case"
    }
    assert case_labels[("expects-in-stock", "response_match_score")] == "fail"
    assert case_labels[("expects-in-stock", "tool_trajectory_avg_score")] == "pass"
    assert case_labels[("no-tool-expected", "tool_trajectory_avg_score")] == "fail"
    assert case_labels[("in-stock", "response_match_score")] == "pass"


async def test_cases_ending_at_different_times_leave_no_trace_cut_short():
    """ADK closes each case's Runner, and so the App's one plugin, as the
    case ends; the other cases' runs in flight then must go on untouched."""
    gate = asyncio.Event()
    held = {"hello": {"gate": gate}}  # every case's "hello" turn waits
    started = asyncio.Event()
    turns = kit.Turns(held)
    original = turns.__call__

    waiting: list[str] = []

    def choose(request: Any) -> Any:
        step = original(request)
        if step.gate is not None:
            waiting.append("held")
            if len(waiting) == 2:
                started.set()
        return step

    telemetry = kit.telemetry()
    root = kit.agent()
    root.model.choose = choose
    plugin = adk_otel.AdkOtelPlugin(tracer_provider=telemetry.tracer_provider)
    service = TracedLocalEvalService(root, kit.eval_set(kit.STANDARD), **kit.app_with(plugin, root))

    request = InferenceRequest(
        app_name=kit.APP, eval_set_id=kit.SET, inference_config=InferenceConfig()
    )
    finished_first: list[str] = []
    async for result in service.perform_inference(request):
        finished_first.append(result.eval_case_id)
        if len(finished_first) == 2:
            # The other two cases ended (their Runners closed the shared
            # plugin) while both "hello" turns are held: only now let them go.
            await started.wait()
            gate.set()
    assert set(finished_first[:2]) == {"expects-in-stock", "no-tool-expected"}
    if not kit.APP_PLUGINS_IN_EVAL:
        assert not telemetry.finished()  # ADK 2.5 runs no App plugin in an eval
        return
    assert len(telemetry.invocations()) == 5
    assert_whole(telemetry)


async def test_an_llm_judged_metric_gives_its_rubric_verdicts_as_the_explanation():
    telemetry = kit.telemetry()
    cases = {"in-stock": kit.STANDARD["in-stock"], "greeting": kit.STANDARD["greeting"]}
    results = await infer_and_score(traced_service(telemetry, cases), [kit.judged_metric()])
    judged = [e for e in telemetry.results() if e.attributes[sc.ADK_EVAL_SCOPE] == "invocation"]
    verdicts = {
        (
            e.attributes[sc.ADK_EVAL_CASE_ID],
            e.attributes[sc.ADK_EVAL_INVOCATION_INDEX],
        ): e.attributes
        for e in judged
    }
    assert verdicts[("in-stock", 0)][sc.GEN_AI_EVALUATION_SCORE_LABEL] == "pass"
    assert verdicts[("in-stock", 0)][sc.GEN_AI_EVALUATION_EXPLANATION] == (
        "says-stock: yes (it names the stock level)"
    )
    assert verdicts[("greeting", 0)][sc.GEN_AI_EVALUATION_SCORE_LABEL] == "fail"
    assert verdicts[("greeting", 0)][sc.GEN_AI_EVALUATION_SCORE_VALUE] == 0.0
    assert "never mentions stock" in verdicts[("greeting", 0)][sc.GEN_AI_EVALUATION_EXPLANATION]
    case_events = {
        e.attributes[sc.ADK_EVAL_CASE_ID]: e.attributes
        for e in telemetry.results()
        if e.attributes[sc.ADK_EVAL_SCOPE] == "case"
    }
    for result in results:
        [overall] = result.overall_eval_metric_results
        event = case_events[result.eval_id]
        assert event[sc.GEN_AI_EVALUATION_SCORE_VALUE] == overall.score
        assert event[sc.GEN_AI_EVALUATION_SCORE_LABEL] == status_label(overall.eval_status)
    assert case_events["greeting"][sc.GEN_AI_EVALUATION_SCORE_LABEL] == "fail"
    if kit.APP_PLUGINS_IN_EVAL:
        assert_whole(telemetry)
    else:
        kit.assert_scored_without_traces(telemetry, results)


async def test_a_case_whose_inference_failed_says_so_for_each_metric(adk_logs_kept_out):
    telemetry = kit.telemetry()
    cases = {
        "greeting": kit.STANDARD["greeting"],
        "broken": [kit.turn("sku A1", "in stock", ["lookup"])],
    }

    def broken_tool(sku: str) -> dict[str, Any]:
        """Stock level for a SKU."""
        raise RuntimeError("stock service down")

    root = kit.agent()
    root.tools = [broken_tool]
    root.model.choose = lambda request: (
        kit.reply("hello, how can I help")
        if request.contents[-1].parts[0].text == "hello"
        else kit.call("broken_tool", {"sku": "A1"})
    )
    plugin = adk_otel.AdkOtelPlugin(tracer_provider=telemetry.tracer_provider)
    service = TracedLocalEvalService(
        root,
        kit.eval_set(cases),
        **kit.app_with(plugin, root),
        logger_provider=telemetry.logger_provider,
    )
    await infer_and_score(service, kit.local_metrics())
    failed = [e for e in telemetry.results() if e.attributes[sc.ADK_EVAL_CASE_ID] == "broken"]
    assert {e.attributes[sc.GEN_AI_EVALUATION_NAME] for e in failed} == {
        "tool_trajectory_avg_score",
        "response_match_score",
    }
    assert {e.attributes[sc.ERROR_TYPE] for e in failed} == {INFERENCE_FAILED}
    assert {e.attributes[sc.GEN_AI_EVALUATION_SCORE_LABEL] for e in failed} == {"fail"}
    if not kit.APP_PLUGINS_IN_EVAL:
        assert not telemetry.finished()  # ADK 2.5 runs no App plugin in an eval
        assert {(e.trace_id, e.span_id) for e in telemetry.results()} == {(0, 0)}
        return
    # The failed run's own trace shows the failure, labelled with its case.
    [broken] = [s for s in telemetry.invocations() if s.attributes[sc.ADK_EVAL_CASE_ID] == "broken"]
    assert broken.attributes[sc.ADK_OUTCOME] == "error"


async def test_adks_own_service_with_the_results_manager_puts_scores_on_the_runs():
    """ADK's LocalEvalService as ``adk eval`` and AgentEvaluator build it,
    handed adk-otel's results manager: the spans carry no case labels (ADK
    never tells the Runner), the events do, in each invocation span's context."""
    telemetry = kit.telemetry()
    root = kit.agent()
    plugin = adk_otel.AdkOtelPlugin(tracer_provider=telemetry.tracer_provider)
    service = LocalEvalService(
        root_agent=root,
        eval_sets_manager=kit.eval_set(kit.STANDARD),
        **kit.app_with(plugin, root),
        eval_set_results_manager=TracedEvalSetResultsManager(
            logger_provider=telemetry.logger_provider
        ),
    )
    results = await infer_and_score(service, kit.local_metrics())
    if not kit.APP_PLUGINS_IN_EVAL:
        kit.assert_scored_without_traces(telemetry, results)
        return
    invocations = telemetry.invocations()
    assert not any(sc.ADK_EVAL_CASE_ID in s.attributes for s in invocations)
    span_of = {s.attributes[sc.ADK_INVOCATION_ID]: s for s in invocations}
    events = [e for e in telemetry.results() if e.attributes[sc.ADK_EVAL_SCOPE] == "invocation"]
    assert len(events) == 2 * 5
    for result in results:
        for index, invocation in enumerate(result.eval_metric_result_per_invocation):
            span = span_of[invocation.actual_invocation.invocation_id]
            mine = [
                e
                for e in events
                if e.attributes[sc.ADK_EVAL_CASE_ID] == result.eval_id
                and e.attributes[sc.ADK_EVAL_INVOCATION_INDEX] == index
            ]
            assert len(mine) == 2
            assert {(e.trace_id, e.span_id) for e in mine} == {
                (span.context.trace_id, span.context.span_id)
            }
    assert_whole(telemetry)


async def test_scores_as_spans_for_backends_that_read_only_spans():
    telemetry = kit.telemetry()
    cases = {"greeting": kit.STANDARD["greeting"]}
    service = traced_service(telemetry, cases, as_spans=True)
    await infer_and_score(service, kit.local_metrics())
    assert not telemetry.results()
    [evaluate] = [s for s in telemetry.finished() if s.name == "evaluate greeting"]
    if kit.APP_PLUGINS_IN_EVAL:
        [invocation] = telemetry.invocations()
        assert evaluate.parent.span_id == invocation.context.span_id
        assert evaluate.context.trace_id == invocation.context.trace_id
    else:
        assert evaluate.parent is None  # ADK 2.5: no traced run to put it under
    assert evaluate.attributes[sc.ADK_EVAL_CASE_ID] == "greeting"
    # What Phoenix and MLflow show it as (an evaluator; UNKNOWN without it).
    assert evaluate.attributes[sc.OPENINFERENCE_SPAN_KIND] == sc.OI_EVALUATOR
    names = Counter(
        (e.name, e.attributes[sc.GEN_AI_EVALUATION_NAME], e.attributes[sc.ADK_EVAL_SCOPE])
        for e in evaluate.events
    )
    assert names == {
        (sc.GEN_AI_EVALUATION_RESULT_EVENT, metric, scope): 1
        for metric in ("tool_trajectory_avg_score", "response_match_score")
        for scope in ("invocation", "case")
    }
    assert all(e.attributes[sc.GEN_AI_EVALUATION_SCORE_LABEL] == "pass" for e in evaluate.events)


def test_results_that_are_not_adks_are_skipped_with_one_warning(caplog):
    caplog.set_level(logging.WARNING)
    telemetry = kit.telemetry()
    sent = record_eval_results(
        [object(), "not a result"], logger_provider=telemetry.logger_provider
    )
    assert sent == 0
    warnings = [r for r in caplog.records if "eval result could not be read" in r.getMessage()]
    assert len(warnings) == 2
    assert all(r.exc_info is not None for r in warnings)


async def test_agent_evaluator_with_the_results_manager_puts_scores_on_the_runs():
    """``AgentEvaluator`` loads the agent module's App (its plugins take part
    on ADK 2.13) and hands its results to the manager it is given."""
    from google.adk.evaluation.agent_evaluator import AgentEvaluator
    from google.adk.evaluation.eval_config import EvalConfig
    from google.adk.evaluation.eval_set import EvalSet

    from .evaluated import agent as module

    telemetry = kit.telemetry()
    [plugin] = module.app.plugins
    plugin.configure(tracer_provider=telemetry.tracer_provider)
    cases = {"in-stock": kit.STANDARD["in-stock"], "greeting": kit.STANDARD["greeting"]}
    manager = kit.eval_set(cases)
    config = EvalConfig(criteria={"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8})
    options: dict[str, Any] = {}
    if "eval_set_results_manager" in inspect.signature(AgentEvaluator.evaluate_eval_set).parameters:
        results_manager = TracedEvalSetResultsManager(logger_provider=telemetry.logger_provider)
        options = {"eval_set_results_manager": results_manager, "app_name": kit.APP}
    await AgentEvaluator.evaluate_eval_set(
        module.__name__,
        EvalSet(eval_set_id=kit.SET, eval_cases=manager.get_eval_set(kit.APP, kit.SET).eval_cases),
        eval_config=config,
        num_runs=1,
        print_detailed_results=False,
        **options,
    )
    if not kit.APP_PLUGINS_IN_EVAL:
        # ADK 2.5: its eval Runner runs no App plugin, and takes no results manager.
        assert not telemetry.finished() and not options
        return
    invocations = telemetry.invocations()
    assert len(invocations) == 3
    assert_whole(telemetry)
    span_ids = {(s.context.trace_id, s.context.span_id) for s in invocations}
    events = telemetry.results()
    assert {(e.trace_id, e.span_id) for e in events} <= span_ids
    configured = [e for e in events if e.attributes[sc.GEN_AI_EVALUATION_NAME] in config.criteria]
    assert len(configured) == 2 * 3 + 2 * 2  # per invocation, and per case
    assert {e.attributes[sc.GEN_AI_EVALUATION_SCORE_LABEL] for e in configured} == {"pass"}
    # AgentEvaluator adds ADK's informational metrics: a value, no verdict.
    others = [e for e in events if e not in configured]
    assert others and {e.attributes[sc.ADK_EVAL_STATUS] for e in others} == {"informational"}
    assert not any(sc.GEN_AI_EVALUATION_SCORE_LABEL in e.attributes for e in others)
