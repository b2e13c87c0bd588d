"""A real eval set over a scripted-model agent, a scripted judge model, and
in-memory span and log exporters: ADK's evaluation, offline."""

from __future__ import annotations

import inspect
import re
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.evaluation.eval_case import EvalCase, IntermediateData, Invocation
from google.adk.evaluation.eval_metrics import (
    EvalMetric,
    JudgeModelOptions,
    RubricsBasedCriterion,
)
from google.adk.evaluation.eval_rubrics import Rubric, RubricContent
from google.adk.evaluation.in_memory_eval_sets_manager import InMemoryEvalSetsManager
from google.adk.evaluation.local_eval_service import LocalEvalService
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.models.registry import LLMRegistry
from google.genai import types
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import adk_otel
from adk_otel import semconv as sc
from adk_otel.testing.model import ScriptedModel, Step, call, reply

APP_PLUGINS_IN_EVAL = "app" in inspect.signature(LocalEvalService.__init__).parameters
"""ADK 2.13 runs eval cases through a Runner built from the App (its plugins
take part); ADK 2.5 builds the eval Runner from the bare agent and its own
plugins only, so no App plugin sees an eval run there."""

APP = "shop"
SET = "stock-checks"
RUBRIC = "The answer says whether the item is in stock."
JUDGE = "scripted-judge-001"


def lookup(sku: str) -> dict[str, Any]:
    """Stock level for a SKU."""
    return {"sku": sku, "stock": 0 if sku == "Z9" else 3}


def answer_for(text: str) -> Step:
    """The agent's scripted behaviour for the user's message ``text``:
    ``sku A1`` -> looks it up, answers in stock; ``sku Z9`` -> looks it up,
    answers out of stock; ``hello`` -> answers without a tool."""
    if text.startswith("sku "):
        return call("lookup", {"sku": text.split()[1]})
    return reply("hello, how can I help")


def final_for(request: LlmRequest) -> Step:
    """The agent's answer after its tool call."""
    for content in reversed(request.contents or []):
        for part in content.parts or []:
            if part.function_response is not None:
                stock = (part.function_response.response or {}).get("stock")
                return reply("in stock" if stock else "out of stock")
    return reply("in stock")


class Turns:
    """Picks each model step from the request: the first turn by the user's
    text, later ones from the tool's answer. ``hold`` maps a user text to a
    Step option dict (a gate, a started event), to hold that turn open."""

    def __init__(self, hold: dict[str, dict[str, Any]] | None = None) -> None:
        self.hold = hold or {}

    def __call__(self, request: LlmRequest) -> Step:
        contents = request.contents or []
        user = [c for c in contents if c.role == "user" and c.parts and c.parts[0].text]
        text = user[-1].parts[0].text if user else ""
        last = contents[-1] if contents else None
        tool_answered = bool(last and last.parts and any(p.function_response for p in last.parts))
        step = final_for(request) if tool_answered else answer_for(text or "")
        options = self.hold.get(text or "") if not tool_answered else None
        if options:
            return Step(parts=step.parts, error=step.error, **options)
        return step


class Careless(Turns):
    """A worse release: still calls the tool, then answers off the point."""

    def __call__(self, request: LlmRequest) -> Step:
        step = super().__call__(request)
        if step.parts and step.parts[0].text in ("in stock", "out of stock"):
            return reply("let me check on that later")
        return step


def agent(turns: Turns | None = None) -> LlmAgent:
    model = ScriptedModel(choose=turns or Turns())
    return LlmAgent(name="clerk", model=model, tools=[lookup])


def app_with(plugin: adk_otel.AdkOtelPlugin, root: LlmAgent) -> dict[str, Any]:
    """``app=`` for LocalEvalService, where this ADK takes one."""
    if not APP_PLUGINS_IN_EVAL:
        return {}
    return {"app": App(name=APP, root_agent=root, plugins=[plugin])}


def assert_scored_without_traces(telemetry: Telemetry, results: Sequence[Any]) -> None:
    """ADK 2.5: no eval run was traced (no App plugin runs there); every
    result is still sent, labelled with its set, case and ADK invocation id,
    with no span context to join."""
    assert not telemetry.finished() or all(
        s.name.startswith("evaluate ") and s.parent is None for s in telemetry.finished()
    )
    events = telemetry.results()
    expected = sum(
        len(per.eval_metric_results) for r in results for per in r.eval_metric_result_per_invocation
    ) + sum(len(r.overall_eval_metric_results) for r in results)
    assert len(events) == expected
    ids = {
        per.actual_invocation.invocation_id
        for r in results
        for per in r.eval_metric_result_per_invocation
    }
    for event in events:
        assert event.trace_id == 0 and event.span_id == 0
        assert event.attributes[sc.ADK_EVAL_SET_ID] == SET
        if event.attributes[sc.ADK_EVAL_SCOPE] == "invocation":
            assert event.attributes[sc.ADK_INVOCATION_ID] in ids


def turn(text: str, final: str, tools: Sequence[str] = ()) -> Invocation:
    sku = text.split()[1] if text.startswith("sku ") else None
    uses = [types.FunctionCall(name=t, args={"sku": sku}) for t in tools]
    return Invocation(
        user_content=types.UserContent(text),
        final_response=types.ModelContent(final),
        intermediate_data=IntermediateData(tool_uses=uses),
    )


def eval_set(cases: dict[str, list[Invocation]]) -> InMemoryEvalSetsManager:
    manager = InMemoryEvalSetsManager()
    manager.create_eval_set(app_name=APP, eval_set_id=SET)
    for case_id, conversation in cases.items():
        manager.add_eval_case(
            app_name=APP,
            eval_set_id=SET,
            eval_case=EvalCase(eval_id=case_id, conversation=conversation),
        )
    return manager


STANDARD = {
    # passes both local metrics
    "in-stock": [turn("sku A1", "in stock", ["lookup"]), turn("hello", "hello, how can I help")],
    # the agent answers "out of stock": response match fails, trajectory passes
    "expects-in-stock": [turn("sku Z9", "in stock", ["lookup"])],
    # the agent calls a tool the case does not expect: trajectory fails
    "no-tool-expected": [turn("sku A1", "in stock")],
    "greeting": [turn("hello", "hello, how can I help")],
}


def local_metrics() -> list[EvalMetric]:
    return [
        EvalMetric(metric_name="tool_trajectory_avg_score", threshold=1.0),
        EvalMetric(metric_name="response_match_score", threshold=0.8),
    ]


def judged_metric() -> EvalMetric:
    return EvalMetric(
        metric_name="rubric_based_final_response_quality_v1",
        threshold=0.5,
        criterion=RubricsBasedCriterion(
            threshold=0.5,
            judge_model_options=JudgeModelOptions(judge_model=JUDGE, num_samples=1),
            rubrics=[
                Rubric(rubric_id="says-stock", rubric_content=RubricContent(text_property=RUBRIC))
            ],
        ),
    )


class ScriptedJudge(BaseLlm):
    """The judge model: says yes to the rubric when the agent's answer it is
    shown mentions stock, no otherwise; garbage when the answer says
    ``garble`` (so the metric cannot be evaluated)."""

    model: str = JUDGE

    @classmethod
    def supported_models(cls) -> list[str]:
        return [r"scripted-judge-.*"]

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        prompt = "\n".join(
            part.text or ""
            for content in llm_request.contents or []
            for part in content.parts or []
        )
        answers = re.findall(r"<final_answer>(.*?)</final_answer>", prompt, re.S)
        answer = answers[-1] if answers else prompt  # the last: the one judged
        if "stock" in answer:
            rationale, verdict = "it names the stock level", "yes"
        else:
            rationale, verdict = "it never mentions stock", "no"
        text = f"ID: says-stock\nProperty: {RUBRIC}\nRationale: {rationale}\nVerdict: {verdict}"
        yield LlmResponse(content=types.ModelContent(text), turn_complete=True)


LLMRegistry.register(ScriptedJudge)


@dataclass
class Telemetry:
    tracer_provider: TracerProvider
    spans: InMemorySpanExporter
    logger_provider: LoggerProvider
    logs: InMemoryLogRecordExporter

    def finished(self) -> list[ReadableSpan]:
        return list(self.spans.get_finished_spans())

    def invocations(self) -> list[ReadableSpan]:
        return [s for s in self.finished() if s.name.startswith("invocation ")]

    def results(self) -> list[Any]:
        return [
            d.log_record
            for d in self.logs.get_finished_logs()
            if d.log_record.event_name == sc.GEN_AI_EVALUATION_RESULT_EVENT
        ]


def telemetry() -> Telemetry:
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    logs = InMemoryLogRecordExporter()
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    return Telemetry(tracer_provider, spans, logger_provider, logs)


def collector_logs(requests: Sequence[Any]) -> str:
    """``ExportLogsServiceRequest`` s as a collector's file exporter writes a
    logs pipeline's batches (the CLI tests' writer, as text)."""
    from cli.collector_files import logs_lines  # imported here: only the tests call it

    return logs_lines(requests).decode("utf-8")
