"""ADK's eval set result files (what ``adk eval`` saves) read as evaluation results.

``adk eval`` saves each run's results in the agent's eval history, one
``EvalSetResult`` JSON file per eval set
(``<agent>/.adk/eval_history/<app>_<set>_<time>.evalset_result.json``): the
eval set id and, per eval case, its id, its session id, each invocation's
metric results (naming ADK's ``invocation_id``) and the case's overall
metric results. The invocation spans adk-otel writes carry the same id
(``adk.invocation.id``), so each metric result becomes the
:class:`~.evaluations.EvaluationResult` its ``gen_ai.evaluation.result`` event
would have been (the same attributes as ``adk_otel.evaluations`` sends) and is
joined to its run by invocation id: the trace and span ids come from the
spans. A case's overall results judge its last invocation, as the events do.

Such a file is told from a trace file by its bytes (a JSON object whose
first key is ``eval_set_result_id``, as ADK writes it, or ADK's older
double-encoded form of the same), or by ADK's file name
(``*.evalset_result.json``), plain or gzipped. It is one JSON document, read
whole within the limit on one document (``--max-document-mb``); a file that
is not one, or not shaped as ADK writes it, is bad input named in one line.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ... import semconv as sc
from .evaluations import NOT_EVALUATED, EvaluationResult, from_attributes, rubric_explanation
from .files import GZIP_MAGIC, expand
from .limits import ReadLimits, over
from .model import SpanRecord, is_invocation
from .otlp_json import OtlpJsonError

SUFFIX = ".evalset_result.json"
"""How ADK names an eval set result file in the eval history."""


_STATUSES = {1: "PASSED", 2: "FAILED", 3: "NOT_EVALUATED", 4: "INFORMATIONAL"}
"""ADK's ``EvalStatus`` by value: how its JSON files hold it."""
_LABELS = {"PASSED": "pass", "FAILED": "fail"}
_SNIFF = 4096
_HEAD = re.compile(
    rb'\A(?:\xef\xbb\xbf)?[ \t\r\n]*(?:\{[ \t\r\n]*"|"\{\\")(?:eval_set_result_id|evalSetResultId)'
)


# -- which files ---------------------------------------------------------------


def is_eval_set_result(path: str) -> bool:
    """Whether ``path`` is a regular file holding (or named as) an ADK eval
    set result. Unreadable files are not: the trace reader reports on them."""
    if path == "-" or not os.path.isfile(path):
        return False
    name = os.path.basename(path)
    if name.endswith((SUFFIX, SUFFIX + ".gz")):
        return True
    try:
        with open(path, "rb") as raw:
            head = raw.read(_SNIFF)
            if head.startswith(GZIP_MAGIC):
                raw.seek(0)
                with gzip.GzipFile(fileobj=raw, mode="rb") as inflated:
                    head = inflated.read(_SNIFF)
    except (OSError, EOFError, zlib.error):
        return False
    return _HEAD.match(head) is not None


def split_inputs(arguments: Sequence[str]) -> tuple[list[str], list[str]]:
    """The inputs as ``(trace arguments, eval set result files)``. Without
    any eval set result file, the trace arguments are ``arguments`` as given
    (the trace reader names them in its messages); with some, the other files
    they name. Only eval set results, no trace file, is bad input."""
    files = expand(arguments)
    results = [file for file in files if is_eval_set_result(file)]
    if not results:
        return list(arguments), []
    traces = [file for file in files if file not in results]
    if not traces:
        what = results[0] if len(results) == 1 else " ".join(arguments)
        raise OtlpJsonError(
            f"{what}: ADK eval set results only, no traces (give the trace files of the"
            " same runs beside them: the results join their runs by invocation id)"
        )
    return traces, results


# -- reading -------------------------------------------------------------------


def read(paths: Iterable[str], *, limits: ReadLimits | None = None) -> list[EvaluationResult]:
    """Every metric result in the eval set result files, none joined yet
    (``trace_id`` None; :func:`join` finds their runs). A file saved twice (the
    same ``eval_set_result_id``) is read once."""
    bounds = limits if limits is not None else _env_limits()
    results: list[EvaluationResult] = []
    seen: set[str] = set()
    for path in paths:
        document = load(path, bounds.document)
        identity = _get(document, "eval_set_result_id")
        if isinstance(identity, str) and identity:
            if identity in seen:
                continue
            seen.add(identity)
        results += parse(document, path)
    return results


def _env_limits() -> ReadLimits:
    try:
        return ReadLimits.from_env()
    except ValueError as exc:
        raise OtlpJsonError(str(exc)) from None


def load(path: str, limit: int) -> dict[str, Any]:
    """The file's JSON object (ADK's double-encoded form decoded too), at most
    ``limit`` bytes once inflated."""
    try:
        with open(path, "rb") as raw:
            if raw.read(2) == GZIP_MAGIC:
                raw.seek(0)
                with gzip.GzipFile(fileobj=raw, mode="rb") as inflated:
                    data = inflated.read(limit + 1)
            else:
                raw.seek(0)
                data = raw.read(limit + 1)
    except FileNotFoundError:
        raise OtlpJsonError(f"{path}: no such file") from None
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise OtlpJsonError(f"{path}: truncated or corrupt gzip data ({exc})") from None
    except OSError as exc:
        raise OtlpJsonError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if len(data) > limit:
        what = "an eval set result longer than allowed"
        raise OtlpJsonError(over(path, what, "document", limit))
    document = _json(data, path)
    if isinstance(document, str):  # saved by an older ADK: the JSON text as a JSON string
        document = _json(document.encode("utf-8", "surrogatepass"), path)
    if not isinstance(document, dict):
        raise _malformed(path, "the file", "an object", document)
    return document


def _json(data: bytes, path: str) -> Any:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise OtlpJsonError(f"{path}: not an ADK eval set result (not UTF-8 text)") from None
    try:
        return json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise OtlpJsonError(f"{path}: not an ADK eval set result (nested too deeply)") from None
    except json.JSONDecodeError as exc:
        raise OtlpJsonError(
            f"{path}: not an ADK eval set result (invalid JSON at line {exc.lineno}: {exc.msg})"
        ) from None
    except ValueError as exc:  # an integer longer than Python converts, NaN, Infinity
        reason = str(exc).split(";", 1)[0]
        raise OtlpJsonError(f"{path}: not an ADK eval set result ({reason})") from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


# -- the shape ADK writes ------------------------------------------------------


class _Malformed(Exception):
    def __init__(self, where: str, expected: str, value: Any) -> None:
        super().__init__(where, expected, value)
        self.where, self.expected, self.value = where, expected, value


def _malformed(path: str, where: str, expected: str, value: Any) -> OtlpJsonError:
    return OtlpJsonError(
        f"{path}: not an ADK eval set result ({where}: expected {expected}, got {_kind(value)})"
    )


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "a number" if isinstance(value, int | float) else type(value).__name__
    )


def _at(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _get(item: Mapping[str, Any], name: str) -> Any:
    """A field as ADK writes it (snake_case), or by its camelCase alias (its web API's)."""
    value = item.get(name)
    return item.get(_camel(name)) if value is None else value


def _object(item: Mapping[str, Any], name: str, where: str) -> dict[str, Any] | None:
    value = _get(item, name)
    if value is not None and not isinstance(value, dict):
        raise _Malformed(_at(where, name), "an object", value)
    return value


def _list(item: Mapping[str, Any], name: str, where: str) -> list[Any]:
    value = _get(item, name)
    if value is None:
        return []
    if not isinstance(value, list):
        raise _Malformed(_at(where, name), "a list", value)
    return value


def _text(item: Mapping[str, Any], name: str, where: str) -> str | None:
    value = _get(item, name)
    if value is not None and not isinstance(value, str):
        raise _Malformed(_at(where, name), "a string", value)
    return value


def _number(item: Mapping[str, Any], name: str, where: str) -> float | None:
    value = _get(item, name)
    if value is None:
        return None
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise _Malformed(_at(where, name), "a number", value)
    return float(value)


def _each_object(values: list[Any], where: str) -> Iterable[tuple[str, dict[str, Any]]]:
    for index, value in enumerate(values):
        here = f"{where}[{index}]"
        if not isinstance(value, dict):
            raise _Malformed(here, "an object", value)
        yield here, value


def parse(document: Mapping[str, Any], path: str = "<eval set result>") -> list[EvaluationResult]:
    """The metric results of one ``EvalSetResult`` document, unjoined."""
    try:
        return list(_results(document))
    except _Malformed as exc:
        raise _malformed(path, exc.where, exc.expected, exc.value) from None


def _results(document: Mapping[str, Any]) -> Iterable[EvaluationResult]:
    set_id = _text(document, "eval_set_id", "")
    cases = _list(document, "eval_case_results", "")
    for where, case in _each_object(cases, "eval_case_results"):
        labels = {
            sc.ADK_EVAL_SET_ID: _text(case, "eval_set_id", where) or set_id,
            sc.ADK_EVAL_CASE_ID: _text(case, "eval_id", where),
        }
        labels = {key: value for key, value in labels.items() if value}
        last: str | None = None
        per_invocation = _list(case, "eval_metric_result_per_invocation", where)
        for index, (here, invocation) in enumerate(
            _each_object(per_invocation, f"{where}.eval_metric_result_per_invocation")
        ):
            actual = _object(invocation, "actual_invocation", here) or {}
            last = _text(actual, "invocation_id", f"{here}.actual_invocation") or None
            metrics = _list(invocation, "eval_metric_results", here)
            for there, metric in _each_object(metrics, f"{here}.eval_metric_results"):
                yield _result(labels, _record(metric, there, "invocation", index), last)
        overall = _list(case, "overall_eval_metric_results", where)
        for there, metric in _each_object(overall, f"{where}.overall_eval_metric_results"):
            yield _result(labels, _record(metric, there, "case", None), last)


def _result(
    labels: Mapping[str, Any], record: dict[str, Any], invocation_id: str | None
) -> EvaluationResult:
    if invocation_id:
        record[sc.ADK_INVOCATION_ID] = invocation_id
    return from_attributes({**labels, **record}, None, None)


def _status(metric: Mapping[str, Any], where: str) -> str:
    value = _get(metric, "eval_status")
    if isinstance(value, int) and not isinstance(value, bool) and value in _STATUSES:
        return _STATUSES[value]
    if isinstance(value, str) and value.upper() in _STATUSES.values():
        return value.upper()
    raise _Malformed(f"{where}.eval_status", "an EvalStatus (1 to 4, or its name)", value)


def _record(metric: Mapping[str, Any], where: str, scope: str, index: int | None) -> dict[str, Any]:
    """One ``EvalMetricResult`` as its event's attributes (as ``adk_otel.evaluations``)."""
    name = _text(metric, "metric_name", where)
    if not name:
        raise _Malformed(f"{where}.metric_name", "a metric name", name)
    status = _status(metric, where)
    record: dict[str, Any] = {
        sc.GEN_AI_EVALUATION_NAME: name,
        sc.ADK_EVAL_SCOPE: scope,
        sc.ADK_EVAL_STATUS: status.lower(),
    }
    score = _number(metric, "score", where)
    if score is not None:
        record[sc.GEN_AI_EVALUATION_SCORE_VALUE] = score
    if status in _LABELS:
        record[sc.GEN_AI_EVALUATION_SCORE_LABEL] = _LABELS[status]
    elif status == "NOT_EVALUATED":
        record[sc.ERROR_TYPE] = NOT_EVALUATED
    criterion = _object(metric, "criterion", where) or {}
    threshold = _number(criterion, "threshold", f"{where}.criterion")
    if threshold is None:
        threshold = _number(metric, "threshold", where)
    if threshold is not None:
        record[sc.ADK_EVAL_THRESHOLD] = threshold
    explanation = _explanation(_object(metric, "details", where) or {}, f"{where}.details")
    if explanation is not None:
        record[sc.GEN_AI_EVALUATION_EXPLANATION] = explanation
    if index is not None:
        record[sc.ADK_EVAL_INVOCATION_INDEX] = index
    return record


def _explanation(details: Mapping[str, Any], where: str) -> str | None:
    return rubric_explanation(
        (
            _text(rubric, "rubric_id", here) or "?",
            _number(rubric, "score", here),
            _text(rubric, "rationale", here),
        )
        for here, rubric in _each_object(
            _list(details, "rubric_scores", where), _at(where, "rubric_scores")
        )
    )


# -- joining -------------------------------------------------------------------


def invocation_id(result: EvaluationResult) -> str | None:
    """The ADK invocation id a result names (its run), if any."""
    value = result.attributes.get(sc.ADK_INVOCATION_ID)
    return value if isinstance(value, str) and value else None


def join(
    results: Iterable[EvaluationResult], records: Iterable[SpanRecord]
) -> list[EvaluationResult]:
    """``results`` with the trace and span ids of the invocation span whose
    ``adk.invocation.id`` each names; a result whose run is not among
    ``records`` is kept unjoined (``trace_id`` None)."""
    wanted = list(results)
    ids = {invocation_id(result) for result in wanted} - {None}
    runs: dict[str, tuple[str, str]] = {}
    for record in records:
        value = record.attributes.get(sc.ADK_INVOCATION_ID)
        if isinstance(value, str) and value in ids and is_invocation(record):
            runs.setdefault(value, record.key)
    joined = []
    for result in wanted:
        key = runs.get(invocation_id(result) or "")
        if key is not None and result.trace_id is None:
            result = replace(result, trace_id=key[0], span_id=key[1])
        joined.append(result)
    return joined
