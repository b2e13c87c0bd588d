"""A comparison's summary of the runs in a store, computed by the engine.

The SQL does what :func:`adk_otel.traces.comparisons.runs.summarize` does
over files, in the same words: one run is one invocation span; its agent,
model, tool and node spans are the spans of its trace with its
``adk.invocation.id``; a span seen twice (same trace and span id) counts
once; outcome, failure categories, tokens, model and tool calls, latency and
path are each run's figures. The engine then counts, per group, how many runs
have each figure (latency and tokens on the comparison's 1 % grid), so what
comes back is a row per distinct value: bounded by the grid and the paths
kept, whatever the number of runs. Python folds those counts into the same
:class:`~adk_otel.traces.comparisons.runs.Summary` the files give.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ... import semconv as sc
from ..comparisons.eval_summary import add_to_tally, case_results
from ..comparisons.runs import ERROR_CATEGORY, MAX_PATHS, NONE, OTHER_PATH, Summary
from ..io.evaluations import from_span_records
from . import schema, spans
from .engine import Store, StoreError
from .selection import Selection, attribute, invocation_sql, literal

_GRID = math.log(1.01)
_SEP = "\x1f"
MAX_ROWS = 5_000_000
"""Rows a summary query may bring back (distinct values per group); more
means a ``--group-by`` attribute with a value per run: refused."""


def quantized(expression: str) -> str:
    """SQL of :func:`~adk_otel.traces.comparisons.stats.quantize` (banker's
    rounding for floats, as Python's ``round``)."""
    v = f"toFloat64({expression})"
    return (
        f"if({v} <= 0, 0., if({v} < 128 AND {v} = floor({v}), {v}, "
        f"round(exp(round(log({v}) / {_GRID!r}) * {_GRID!r}), 6)))"
    )


def _after_space() -> str:
    space = "position(SpanName, ' ')"
    return f"if({space} > 0, substring(SpanName, {space} + 1), SpanName)"


def _error_status() -> str:
    return f"StatusCode IN ({', '.join(literal(s) for s in schema.ERROR_STATUS)})"


def _outcome() -> str:
    outcome = f"SpanAttributes[{literal(sc.ADK_OUTCOME)}]"
    return f"if({outcome} != '', {outcome}, if({_error_status()}, 'error', 'ok'))"


def _error_category() -> str:
    """:func:`~adk_otel.traces.comparisons.runs.error_category` ('' for none)."""
    attributes = "SpanAttributes"
    category = f"{attributes}[{literal(ERROR_CATEGORY)}]"
    error_type = (
        f"if(mapContains({attributes}, {literal(sc.ERROR_TYPE)}), "
        f"{attributes}[{literal(sc.ERROR_TYPE)}], "
        "`Events.Attributes`[indexOf(`Events.Name`, 'exception')]['exception.type'])"
    )
    failed = f"(SpanAttributes[{literal(sc.ADK_OUTCOME)}] = 'error' OR {_error_status()})"
    return (
        f"if({failed}, if({category} != '', {category}, "
        f"if({error_type} != '', {error_type}, 'error')), '')"
    )


def _layer_name() -> str:
    keys = {
        "agent": sc.GEN_AI_AGENT_NAME,
        "tool": sc.GEN_AI_TOOL_NAME,
        "model": sc.GEN_AI_REQUEST_MODEL,
        "node": sc.ADK_NODE_NAME,
    }
    kind = f"SpanAttributes[{literal(sc.ADK_SPAN_KIND)}]"
    branches = ", ".join(
        f"{kind} = {literal(k)} AND mapContains(SpanAttributes, {literal(v)}), "
        f"SpanAttributes[{literal(v)}]"
        for k, v in keys.items()
    )
    return f"multiIf({branches}, {_after_space()})"


def _group_values(group_by: Sequence[str]) -> str:
    app = f"SpanAttributes[{literal(sc.ADK_APP_NAME)}]"
    values = [f"if({app} != '', {app}, {_after_space()})"]
    for name in group_by:
        key = literal(name)
        values.append(
            f"if(mapContains(SpanAttributes, {key}), SpanAttributes[{key}], "
            f"if(mapContains(ResourceAttributes, {key}), ResourceAttributes[{key}], "
            f"{literal(NONE)}))"
        )
    return f"[{', '.join(values)}]"


def runs_sql(table: str, selection: Selection, group_by: Sequence[str]) -> str:
    """One row per run: its group, its figures, its sorted distinct steps."""
    invocation = invocation_sql()
    kind = f"SpanAttributes[{literal(sc.ADK_SPAN_KIND)}]"
    invocation_id = f"SpanAttributes[{literal(sc.ADK_INVOCATION_ID)}]"
    step = (
        f"({kind} IN ('agent', 'model', 'tool', 'node') AND "
        f"mapContains(SpanAttributes, {literal(sc.ADK_INVOCATION_ID)}))"
    )
    spans_where = f"({invocation} OR {step}) AND {selection.span_sql()}"
    if not selection.empty:
        spans_where += (
            f" AND TraceId IN (SELECT TraceId FROM {table} WHERE {invocation} AND "
            f"{selection.span_sql()} AND {selection.sql()})"
        )
    tokens = (
        f"if({kind} = 'model', toInt64OrZero(SpanAttributes[{literal(name)}]), 0)"
        for name in (sc.GEN_AI_USAGE_INPUT_TOKENS, sc.GEN_AI_USAGE_OUTPUT_TOKENS)
    )
    input_tokens, output_tokens = tokens
    keep = "selected" if not selection.empty else "(selected OR NOT has_invocation)"
    return f"""
SELECT
    TraceId, run_id,
    max(is_invocation) AS has_invocation,
    maxIf(is_selected, is_invocation) AS selected,
    anyIf(group_values, is_invocation) AS run_group,
    anyIf(outcome, is_invocation) AS run_outcome,
    anyIf(category, is_invocation) AS run_category,
    anyIf(Duration, is_invocation) AS run_duration,
    countIf(is_invocation) AS invocations,
    countIf(NOT is_invocation) AS step_rows,
    arraySort(groupUniqArrayIf(
        (start_ns, SpanId, step_kind, layer_name, outcome, category, Duration,
         input_tokens, output_tokens),
        NOT is_invocation)) AS steps
FROM (
    SELECT
        TraceId, SpanId, Duration,
        {invocation} AS is_invocation,
        if(is_invocation, if({invocation_id} != '', {invocation_id}, SpanId), {invocation_id})
            AS run_id,
        {selection.sql()} AS is_selected,
        if(is_invocation, {_group_values(group_by)}, []) AS group_values,
        toUnixTimestamp64Nano(Timestamp) AS start_ns,
        {kind} AS step_kind,
        {_layer_name()} AS layer_name,
        {_outcome()} AS outcome,
        {_error_category()} AS category,
        {input_tokens} AS input_tokens,
        {output_tokens} AS output_tokens
    FROM {table}
    WHERE {spans_where}
)
GROUP BY TraceId, run_id
HAVING {keep}"""


def summary_sql(table: str, selection: Selection, group_by: Sequence[str]) -> str:
    """Per group, how many runs have each figure (and layers each span's)."""
    sep = literal(_SEP)
    figures = ", ".join(
        f"('{name}', '', {quantized(value)})"
        for name, value in (
            ("latency_ms", "run_duration / 1e6"),
            ("input_tokens", "input_sum"),
            ("output_tokens", "output_sum"),
            ("tokens", "input_sum + output_sum"),
            ("model_calls", "model_calls"),
            ("tool_calls", "tool_calls"),
        )
    )
    return f"""
SELECT run_group, metric, key, value, n FROM (
    SELECT run_group, figure.1 AS metric, figure.2 AS key, figure.3 AS value, count() AS n
    FROM (
        SELECT *,
            arrayMap(s -> s.3, steps) AS kinds,
            arrayMap(s -> concat(s.3, ':', s.4), arrayFilter(s -> s.3 != 'model', steps)) AS names,
            arrayFilter((p, i) -> i = 1 OR p != names[i - 1], names, arrayEnumerate(names))
                AS path,
            countEqual(kinds, 'model') AS model_calls,
            countEqual(kinds, 'tool') AS tool_calls,
            arraySum(arrayMap(s -> s.8, steps)) AS input_sum,
            arraySum(arrayMap(s -> s.9, steps)) AS output_sum,
            arrayDistinct(arrayFilter(c -> c != '',
                arrayConcat([run_category], arrayMap(s -> s.6, steps)))) AS categories,
            toFloat64(invocations - 1 + step_rows - length(steps)) AS duplicates
        FROM ({runs_sql(table, selection, group_by)})
    )
    ARRAY JOIN if(has_invocation,
        arrayConcat(
            [('outcome', if(run_outcome != '', run_outcome, 'ok'), 0.),
             {figures},
             ('path', arrayStringConcat(path, {sep}), 0.),
             ('spans', '', toFloat64(length(steps) + 1)),
             ('duplicates', '', duplicates)],
            arrayMap(c -> ('error', c, 0.), categories),
            arrayMap(s -> ('layer', concat(s.3, {sep}, s.4, {sep}, s.5, {sep}, s.6),
                {quantized("s.7 / 1e6")}), steps)),
        [('unattached', '', toFloat64(length(steps))),
         ('duplicates', '', duplicates),
         ('spans', '', toFloat64(length(steps)))]) AS figure
    GROUP BY run_group, metric, key, value
)
ORDER BY metric = 'path' DESC, n DESC, key
LIMIT {MAX_PATHS} BY run_group, if(metric = 'path', 'path', concat(metric, key, toString(value)))
"""


def summarize_store(
    store: Store, selection: Selection, group_by: Sequence[str] = (), *, source: str = ""
) -> Summary:
    """The :class:`Summary` of the selected runs in ``store``."""
    from ..comparisons.runs import GroupSummary

    table = spans.checked_table(store)
    group_by = tuple(group_by)
    summary = Summary(group_by=group_by, source=source)
    keys: dict[tuple[str, ...], tuple[tuple[str, str], ...]] = {}
    rows = store.rows(summary_sql(table, selection, group_by) + f" LIMIT {MAX_ROWS + 1}")
    if len(rows) > MAX_ROWS:
        raise StoreError(
            f"{source}: more than {MAX_ROWS} distinct values per group; group by "
            "an attribute with fewer values"
        )
    path_runs: dict[tuple[tuple[str, str], ...], int] = {}
    for values, metric, key, value, count in rows:
        count = int(count)
        if metric in ("unattached", "duplicates", "spans"):
            total = int(float(value)) * count
            if metric == "unattached":
                summary.unattached_spans += total
            elif metric == "duplicates":
                summary.duplicate_spans += total
            else:
                summary.spans += total
            continue
        names = tuple(values)
        group_key = keys.get(names)
        if group_key is None:
            group_key = (("adk.app.name", names[0]), *zip(group_by, names[1:], strict=True))
            keys[names] = group_key
        group = summary.groups.setdefault(group_key, GroupSummary())
        if metric == "outcome":
            group.runs += count
            group.outcomes[key] += count
        elif metric == "error":
            group.error_runs[key] += count
        elif metric == "path":
            path = tuple(key.split(_SEP)) if key else ()
            group.paths[path] += count
            path_runs[group_key] = path_runs.get(group_key, 0) + count
        elif metric == "layer":
            kind, name, outcome, error = key.split(_SEP)
            stats = group.layer(kind, name)
            stats.spans += count
            stats.outcomes[outcome or "ok"] += count
            if error:
                stats.errors[error] += count
            stats.latency_ms.add(float(value), count)
        else:
            getattr(group, metric).add(float(value), count)
    for group_key, group in summary.groups.items():
        other = group.runs - path_runs.get(group_key, 0)
        if other > 0:  # paths beyond the commonest MAX_PATHS
            group.paths[OTHER_PATH] += other
    _add_evaluations(store, table, selection, group_by, summary, keys)
    return summary


def _add_evaluations(
    store: Store,
    table: str,
    selection: Selection,
    group_by: Sequence[str],
    summary: Summary,
    keys: dict[tuple[str, ...], tuple[tuple[str, str], ...]],
) -> None:
    """The span form of evaluation results (``gen_ai.evaluation.result``
    events), joined to the selected runs they judge: few rows (one a case
    result), read as spans."""
    records = spans.read_spans(
        store,
        table,
        f"has(`Events.Name`, {literal(sc.GEN_AI_EVALUATION_RESULT_EVENT)})",
        selection=selection,
        what="evaluation spans",
    )
    if not records:
        return
    results = case_results(from_span_records(records))
    judged = {(r.trace_id, r.span_id) for r in results if r.trace_id and r.span_id}
    if not judged:
        summary.unattached_evaluations += len(results)
        return
    pairs = ", ".join(f"({literal(t)}, {literal(s)})" for t, s in sorted(judged))
    rows = store.rows(
        f"SELECT TraceId, SpanId, {_group_values(group_by)} FROM {table} "
        f"WHERE (TraceId, SpanId) IN ({pairs}) AND {invocation_sql()} AND {selection.sql()} "
        "LIMIT 1 BY TraceId, SpanId"
    )
    group_of = {(t, s): keys.get(tuple(values)) for t, s, values in rows}
    for result in results:
        group_key = group_of.get((result.trace_id or "", result.span_id or ""))
        if group_key is None or group_key not in summary.groups:
            summary.unattached_evaluations += 1
            continue
        summary.groups[group_key].metric(result.name).add(result)
        add_to_tally(summary.eval_cases, result)


__all__ = ["attribute", "runs_sql", "summarize_store", "summary_sql"]
