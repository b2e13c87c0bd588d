"""ADK's evaluation results on the traces of the runs they judge.

Three ways in, all through ADK's public eval interfaces (docs/evaluations.md):

* :class:`TracedLocalEvalService`, a drop-in ``LocalEvalService``: each case's
  inference runs in a context naming its eval set and case, so every
  invocation span carries ``adk.eval.set.id``, ``adk.eval.case.id`` and
  ``adk.eval.invocation.index``; and every result its ``evaluate()`` yields is
  sent as ``gen_ai.evaluation.result`` events on those invocation spans.
* :class:`TracedEvalSetResultsManager`, for ``AgentEvaluator`` (and any
  ``LocalEvalService``), which take an ``eval_set_results_manager``: the
  results it is handed to save are sent the same way. The spans carry no case
  labels then (ADK never tells the Runner which case it runs); the events do.
* :func:`record_eval_results`, for results obtained any other way.

A result finds its invocation span by ADK's invocation id, which the plugin
remembered for each evaluation run (``eval_runs.py``). One event per metric per
invocation (``adk.eval.scope=invocation``) and one per metric for the case
(``adk.eval.scope=case``, on the case's last invocation span): the metric's
name, its score, ``pass`` or ``fail`` against its threshold, the rubric
verdicts as the explanation where ADK has them, and ``error.type`` when the
metric could not be evaluated or the case's inference failed.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import AsyncGenerator, Iterable, Sequence
from typing import Any

try:
    from google.adk.evaluation.base_eval_service import (
        EvaluateRequest,
        InferenceRequest,
        InferenceResult,
    )
    from google.adk.evaluation.eval_result import EvalCaseResult
    from google.adk.evaluation.eval_set_results_manager import EvalSetResultsManager
    from google.adk.evaluation.eval_sets_manager import EvalSetsManager
    from google.adk.evaluation.local_eval_service import LocalEvalService
except ImportError as _missing:  # ADK's eval extra is not installed
    raise ImportError(
        f"adk_otel.evaluations needs ADK's evaluation extra ({_missing}); "
        "install it with: pip install 'google-adk[eval]'"
    ) from _missing
from opentelemetry import trace

from . import semconv as sc
from .integrations import eval_runs
from .integrations.eval_events import Record, Sender
from .traces.io.evaluations import NOT_EVALUATED, rubric_explanation
from .util.redact import guarded
from .util.sanitize import attributes as clean

logger: logging.Logger = guarded(logging.getLogger(__name__))

INFERENCE_FAILED = "inference_failed"
"""``error.type`` of each metric of a case whose inference failed."""
_LABELS = {"PASSED": "pass", "FAILED": "fail"}


def _status(value: Any) -> str:
    name = getattr(value, "name", None)
    return name if isinstance(name, str) else str(value)


def _threshold(result: Any) -> float | None:
    criterion = getattr(result, "criterion", None)
    value = getattr(criterion, "threshold", None)
    if value is None:
        value = getattr(result, "threshold", None)
    return float(value) if isinstance(value, int | float) else None


def _explanation(result: Any) -> str | None:
    details = getattr(result, "details", None)
    rubrics = getattr(details, "rubric_scores", None) or ()
    return rubric_explanation(
        (
            getattr(rubric, "rubric_id", "?"),
            getattr(rubric, "score", None),
            getattr(rubric, "rationale", None),
        )
        for rubric in rubrics
    )


def result_record(metric_result: Any, scope: str, index: int | None) -> dict[str, Any]:
    """One metric result (ADK's ``EvalMetricResult``) as an event's attributes."""
    status = _status(getattr(metric_result, "eval_status", None))
    record: dict[str, Any] = {
        sc.GEN_AI_EVALUATION_NAME: str(getattr(metric_result, "metric_name", "")),
        sc.ADK_EVAL_SCOPE: scope,
        sc.ADK_EVAL_STATUS: status.lower(),
    }
    score = getattr(metric_result, "score", None)
    if isinstance(score, int | float) and not isinstance(score, bool):
        record[sc.GEN_AI_EVALUATION_SCORE_VALUE] = float(score)
    if status in _LABELS:
        record[sc.GEN_AI_EVALUATION_SCORE_LABEL] = _LABELS[status]
    elif status == "NOT_EVALUATED":
        record[sc.ERROR_TYPE] = NOT_EVALUATED
    threshold = _threshold(metric_result)
    if threshold is not None:
        record[sc.ADK_EVAL_THRESHOLD] = threshold
    explanation = _explanation(metric_result)
    if explanation is not None:
        record[sc.GEN_AI_EVALUATION_EXPLANATION] = explanation
    if index is not None:
        record[sc.ADK_EVAL_INVOCATION_INDEX] = index
    return dict(clean(record) or {})


def _send_case_result(
    result: EvalCaseResult, sender: Sender, metrics: Sequence[Any] | None = None
) -> None:
    """Send one case's results: per invocation, then for the case (on its
    last invocation's span), one send per invocation judged."""
    labels = dict(
        clean({sc.ADK_EVAL_SET_ID: result.eval_set_id, sc.ADK_EVAL_CASE_ID: result.eval_id}) or {}
    )
    groups: list[tuple[eval_runs.Judged | None, list[Record]]] = []
    for index, per_invocation in enumerate(result.eval_metric_result_per_invocation or ()):
        invocation_id = getattr(per_invocation.actual_invocation, "invocation_id", "")
        judged = eval_runs.RUNS.get(invocation_id) if invocation_id else None
        records: list[Record] = [
            {**result_record(metric, "invocation", index), sc.ADK_INVOCATION_ID: invocation_id}
            if invocation_id
            else result_record(metric, "invocation", index)
            for metric in per_invocation.eval_metric_results or ()
        ]
        groups.append((judged, records))
    overall: list[Record] = [
        result_record(m, "case", None) for m in result.overall_eval_metric_results or ()
    ]
    if not overall and metrics and not groups:
        # The case's inference failed: ADK scored nothing. Each metric says so.
        overall = [
            {
                sc.GEN_AI_EVALUATION_NAME: str(getattr(metric, "metric_name", "")),
                sc.ADK_EVAL_SCOPE: "case",
                sc.ADK_EVAL_STATUS: "failed",
                sc.GEN_AI_EVALUATION_SCORE_LABEL: "fail",
                sc.ERROR_TYPE: INFERENCE_FAILED,
            }
            for metric in metrics
        ]
    if groups:
        groups[-1][1].extend(overall)
    else:
        groups.append((None, overall))
    for judged, records in groups:
        sender.send(judged, labels, records)


def record_eval_results(
    results: Iterable[EvalCaseResult],
    *,
    metrics: Sequence[Any] | None = None,
    tracer_provider: trace.TracerProvider | None = None,
    logger_provider: Any = None,
    as_spans: bool | None = None,
) -> int:
    """Send ADK eval results (``EvalCaseResult``) as ``gen_ai.evaluation.result``
    events on the invocation spans they judge; returns how many were sent.
    ``metrics`` (ADK's ``EvalMetric`` list) names what a case whose inference
    failed was to be scored on. Never raises for a malformed result: it is
    skipped with a warning."""
    sender = Sender(
        tracer_provider=tracer_provider, logger_provider=logger_provider, spans=as_spans
    )
    for result in results:
        try:
            _send_case_result(result, sender, metrics)
        except Exception:
            logger.warning("adk-otel: an eval result could not be read; skipped", exc_info=True)
    return sender.sent


class TracedEvalSetResultsManager(EvalSetResultsManager):
    """An ``EvalSetResultsManager`` that sends each result it is handed to
    save as events on the traces (then hands it on to ``inner``, if any)."""

    def __init__(
        self,
        inner: EvalSetResultsManager | None = None,
        *,
        tracer_provider: trace.TracerProvider | None = None,
        logger_provider: Any = None,
        as_spans: bool | None = None,
    ) -> None:
        self._inner = inner
        self._options: dict[str, Any] = {
            "tracer_provider": tracer_provider,
            "logger_provider": logger_provider,
            "as_spans": as_spans,
        }

    def save_eval_set_result(
        self,
        app_name: str,
        eval_set_id: str,
        eval_case_results: list[EvalCaseResult],
        multi_run_case_summaries: Any = None,
    ) -> None:
        """``multi_run_case_summaries``: ADK >= 2.15 passes them for cases run
        more than once; handed on only when given, as older managers take none."""
        record_eval_results(eval_case_results, **self._options)
        if self._inner is None:
            return
        if multi_run_case_summaries is None:
            self._inner.save_eval_set_result(app_name, eval_set_id, eval_case_results)
        else:
            self._inner.save_eval_set_result(
                app_name,
                eval_set_id,
                eval_case_results,
                multi_run_case_summaries=multi_run_case_summaries,
            )

    def get_eval_set_result(self, app_name: str, eval_set_result_id: str) -> Any:
        if self._inner is None:
            from google.adk.errors.not_found_error import NotFoundError

            raise NotFoundError(f"Eval set result `{eval_set_result_id}` not found.")
        return self._inner.get_eval_set_result(app_name, eval_set_result_id)

    def list_eval_set_results(self, app_name: str) -> list[str]:
        return [] if self._inner is None else self._inner.list_eval_set_results(app_name)


class TracedLocalEvalService(LocalEvalService):
    """ADK's ``LocalEvalService`` with its runs labelled and its results on
    the traces. Takes ``LocalEvalService``'s arguments, plus
    ``tracer_provider``, ``logger_provider`` and ``as_spans`` for the result
    events (default: the providers of the plugin that traced each run, else
    the global ones)."""

    def __init__(
        self,
        root_agent: Any,
        eval_sets_manager: EvalSetsManager,
        *args: Any,
        tracer_provider: trace.TracerProvider | None = None,
        logger_provider: Any = None,
        as_spans: bool | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(root_agent, eval_sets_manager, *args, **kwargs)
        self._adk_otel_sets = eval_sets_manager
        self._adk_otel_sender = functools.partial(
            Sender, tracer_provider=tracer_provider, logger_provider=logger_provider, spans=as_spans
        )

    async def perform_inference(
        self, inference_request: InferenceRequest
    ) -> AsyncGenerator[InferenceResult, None]:
        """ADK's inference, one case at a time per task (as many at once as
        its ``parallelism``), each in a context naming its eval set and case."""
        case_ids = _case_ids(self._adk_otel_sets, inference_request)
        parallelism = inference_request.inference_config.parallelism
        if case_ids is None or parallelism < 1:
            # Unknown set or a bad parallelism: ADK's own answer (its error).
            async for result in super().perform_inference(inference_request):
                yield result
            return
        inner = super().perform_inference
        gate = asyncio.Semaphore(parallelism)

        async def one(case_id: str) -> list[InferenceResult]:
            async with gate:
                # This task's own context: the case's runs see it, no other's.
                eval_runs.CURRENT_CASE.set(
                    eval_runs.EvalCase(inference_request.eval_set_id, case_id)
                )
                request = inference_request.model_copy(update={"eval_case_ids": [case_id]})
                return [result async for result in inner(request)]

        tasks = [asyncio.ensure_future(one(case_id)) for case_id in case_ids]
        try:
            for finished in asyncio.as_completed(tasks):
                for result in await finished:
                    yield result
        finally:
            for task in tasks:
                task.cancel()

    async def evaluate(
        self, evaluate_request: EvaluateRequest
    ) -> AsyncGenerator[EvalCaseResult, None]:
        """ADK's evaluation; each result is also sent to the traces."""
        sender = self._adk_otel_sender()
        metrics = evaluate_request.evaluate_config.eval_metrics
        async for result in super().evaluate(evaluate_request):
            try:
                _send_case_result(result, sender, metrics)
            except Exception:
                logger.warning("adk-otel: an eval result could not be read; skipped", exc_info=True)
            yield result


def _case_ids(sets: Any, request: InferenceRequest) -> list[str] | None:
    """The ids of the cases ``request`` runs, in the set's order, once each;
    None when the eval set is not found (ADK reports that)."""
    try:
        eval_set = sets.get_eval_set(app_name=request.app_name, eval_set_id=request.eval_set_id)
    except Exception:
        return None
    if eval_set is None:
        return None
    wanted = set(request.eval_case_ids or ())
    ids: list[str] = []
    for case in eval_set.eval_cases:
        if (not wanted or case.eval_id in wanted) and case.eval_id not in ids:
            ids.append(case.eval_id)
    return ids
