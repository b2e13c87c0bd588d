"""A comparison's summary of the runs in a store, computed by the engine.

The SQL does what :func:`adk_otel.traces.comparisons.runs.summarize` does
over files, from the same declarations (comparisons/figures.py: the steps'
names and numbers and a run's figures, each written here as SQL), in the
same words: one run is one invocation span; its agent, model, tool and node
spans are the spans of its trace with its ``adk.invocation.id``; a span seen
twice (same trace and span id) counts once; outcome, failure categories,
tokens, model and tool calls, latency and path are each run's figures. The
engine then counts, per group, how many runs have each figure (latency and
tokens on the comparison's 1 % grid), so what comes back is a row per
distinct value: bounded by the grid and the paths kept, whatever the number
of runs. Python folds those counts into the same
:class:`~adk_otel.traces.comparisons.runs.Summary` the files give.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ... import semconv as sc
from ..comparisons.eval_summary import add_to_tally, case_results
from ..comparisons.figures import (
    ERROR_CATEGORY,
    FIGURES,
    LAYERS,
    STEP_NAME,
    STEP_NUMBERS,
    RunFigure,
)
from ..comparisons.runs import (
    MAX_PATHS,
    NONE,
    OTHER_PATH,
    GroupSummary,
    Summary,
)
from ..io.evaluations import from_span_records
from . import schema, spans
from .engine import Store, StoreError
from .selection import Selection, attribute, invocation_sql, literal, missing_key

_GRID = math.log(1.01)
_SEP = "\x1f"
MAX_GROUPS = 10_000
"""Groups a summary may hold: more means a ``--group-by`` attribute with
about a value per run, which no comparison can judge: refused."""


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
    kind = f"SpanAttributes[{literal(sc.ADK_SPAN_KIND)}]"
    branches = ", ".join(
        f"{kind} = {literal(k)} AND mapContains(SpanAttributes, {literal(v)}), "
        f"SpanAttributes[{literal(v)}]"
        for k, v in STEP_NAME.items()
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


def runs_sql(table: str, selections: Sequence[Selection], group_by: Sequence[str]) -> str:
    """One row per run: its group, the selections it is in (``sides``, from
    1), its figures, its sorted distinct steps. Every selection in one scan."""
    invocation = invocation_sql()
    kind = f"SpanAttributes[{literal(sc.ADK_SPAN_KIND)}]"
    invocation_id = f"SpanAttributes[{literal(sc.ADK_INVOCATION_ID)}]"
    step = (
        f"({kind} IN ({', '.join(literal(layer) for layer in LAYERS)}) AND "
        f"mapContains(SpanAttributes, {literal(sc.ADK_INVOCATION_ID)}))"
    )
    every = all(selection.empty for selection in selections)
    span_sql = " OR ".join(f"({selection.span_sql()})" for selection in selections)
    spans_where = f"({invocation} OR {step}) AND ({span_sql})"
    if not every:
        chosen = " OR ".join(
            f"({selection.span_sql()} AND {selection.sql()})" for selection in selections
        )
        spans_where += (
            # By the trace id's hash: a set of 8-byte numbers, not of strings. A trace
            # let in by a collision has no selected run, so none of it is counted.
            f" AND cityHash64(TraceId) IN (SELECT cityHash64(TraceId) FROM {table} "
            f"WHERE {invocation} AND ({chosen}))"
        )
    flags = ", ".join(f"toUInt8({selection.sql()})" for selection in selections)
    numbers = "".join(
        f",\n        {_step_number(number.kind, number.keys)} AS {number.name}"
        for number in STEP_NUMBERS
    )
    step_numbers = "".join(f", {number.name}" for number in STEP_NUMBERS)
    keep = "has_invocation" if not every else "1"
    sep = literal(_SEP)
    return f"""
SELECT
    max(is_invocation) AS has_invocation,
    anyIf(side_flags, is_invocation) AS run_sides,
    if(has_invocation, arrayFilter(i -> run_sides[i] = 1, arrayEnumerate(run_sides)), [1])
        AS sides,
    anyIf(group_values, is_invocation) AS run_group,
    anyIf(outcome, is_invocation) AS run_outcome,
    anyIf(category, is_invocation) AS run_category,
    anyIf(Duration, is_invocation) AS run_duration,
    countIf(is_invocation) AS invocations,
    countIf(NOT is_invocation) AS step_rows,
    arraySort(groupArrayIf(
        (start_ns, span_hash, layer_key, Duration{step_numbers}),
        NOT is_invocation)) AS sorted_steps,
    -- each step's span once (the hash before it in start order: 0 for the first)
    arrayFilter((s, previous) -> s.2 != previous, sorted_steps,
        arrayPopBack(arrayPushFront(arrayMap(s -> s.2, sorted_steps), toUInt64(0)))) AS steps
FROM (
    SELECT
        Duration,
        {invocation} AS is_invocation,
        cityHash64(TraceId, if(is_invocation,
            if({invocation_id} != '', {invocation_id}, SpanId), {invocation_id})) AS run_key,
        cityHash64(SpanId) AS span_hash,
        if(is_invocation, [{flags}], []) AS side_flags,
        if(is_invocation, {_group_values(group_by)}, []) AS group_values,
        toUnixTimestamp64Nano(Timestamp) AS start_ns,
        {_outcome()} AS outcome,
        {_error_category()} AS category,
        if(is_invocation, '',
            concat({kind}, {sep}, {_layer_name()}, {sep}, outcome, {sep}, category))
            AS layer_key{numbers}
    FROM {table}
    WHERE {spans_where}
)
GROUP BY run_key
HAVING {keep} AND notEmpty(sides)"""


def _counts(keys: str, where: str = "has_invocation") -> str:
    """SQL: per group, how many of the runs (``where``) have each of ``keys``."""
    return f"sumMapIf({keys}, arrayMap(k -> toUInt64(1), {keys}), {where})"


_FIRST_NUMBER = 5
"""A step's tuple: start, span hash, layer key, duration, then its step numbers."""


def _step_number(kind: str, keys: tuple[str, ...]) -> str:
    """SQL of :meth:`~adk_otel.traces.comparisons.figures.StepNumber.of`: on a
    span of ``kind``, the first of ``keys`` it carries, else 0."""
    span_kind = f"SpanAttributes[{literal(sc.ADK_SPAN_KIND)}]"
    branches = "".join(
        f"mapContains(SpanAttributes, {literal(key)}), SpanAttributes[{literal(key)}], "
        for key in keys
    )
    return f"if({span_kind} = {literal(kind)}, toInt64OrZero(multiIf({branches}'')), 0)"


def _figure(figure: RunFigure) -> str:
    """SQL of :meth:`~adk_otel.traces.comparisons.figures.RunFigure.of`, over a
    run's row of :func:`runs_sql` (``kinds``: its steps' kinds)."""
    if figure.duration:
        return "run_duration / 1e6"
    if figure.counts is not None:
        return f"countEqual(kinds, {literal(figure.counts)})"
    index = {number.name: _FIRST_NUMBER + i for i, number in enumerate(STEP_NUMBERS)}
    return " + ".join(f"arraySum(arrayMap(s -> s.{index[name]}, steps))" for name in figure.sums)


def summary_sql(table: str, selections: Sequence[Selection], group_by: Sequence[str]) -> str:
    """A row per group: how many runs have each figure (latency and tokens on
    the 1 % grid), each outcome, error category and path, and how many spans
    each layer's outcome, error and latency."""
    sep = literal(_SEP)
    figures = ",\n    ".join(
        f"{_counts(f'[{quantized(_figure(figure))}]')} AS {figure.name}" for figure in FIGURES
    )
    layer = f"concat(s.3, {sep}, toString({quantized('s.4 / 1e6')}))"
    return f"""
SELECT
    side,
    run_group,
    countIf(has_invocation) AS runs,
    sumIf(length(steps), NOT has_invocation) AS unattached,
    sum(invocations + step_rows - length(steps) - has_invocation) AS duplicates,
    sum(length(steps) + has_invocation) AS spans,
    {_counts("[if(run_outcome != '', run_outcome, 'ok')]")} AS outcomes,
    {_counts("categories")} AS errors,
    {figures},
    {_counts(f"[arrayStringConcat(path, {sep})]")} AS paths,
    {_counts(f"arrayMap(s -> {layer}, steps)")} AS layers
FROM (
    SELECT *,
        arrayMap(s -> splitByChar({sep}, s.3), steps) AS parts,
        arrayMap(p -> p[1], parts) AS kinds,
        arrayMap(p -> concat(p[1], ':', p[2]), arrayFilter(p -> p[1] != 'model', parts))
            AS names,
        arrayFilter((p, i) -> i = 1 OR p != names[i - 1], names, arrayEnumerate(names)) AS path,
        arrayDistinct(arrayFilter(c -> c != '',
            arrayConcat([run_category], arrayMap(p -> p[4], parts)))) AS categories
    FROM ({runs_sql(table, selections, group_by)})
)
ARRAY JOIN sides AS side
GROUP BY side, run_group
"""


def summarize_store(
    store: Store, selection: Selection, group_by: Sequence[str] = (), *, source: str = ""
) -> Summary:
    """The :class:`Summary` of the selected runs in ``store``."""
    return summarize_sides(store, [selection], group_by, sources=[source])[0]


def summarize_sides(
    store: Store,
    selections: Sequence[Selection],
    group_by: Sequence[str] = (),
    *,
    sources: Sequence[str] = (),
) -> list[Summary]:
    """A :class:`Summary` per selection (a run in two selections counts in
    both), from one scan of the table."""
    table = spans.checked_table(store)
    group_by = tuple(group_by)
    labels = list(sources) or [""] * len(selections)
    summaries = [Summary(group_by=group_by, source=label) for label in labels]
    keys: dict[tuple[str, ...], tuple[tuple[str, str], ...]] = {}
    sql = summary_sql(table, selections, group_by)
    rows = store.rows(f"{sql}LIMIT {MAX_GROUPS + 1} SETTINGS {store.aggregation_settings}")
    if len(rows) > MAX_GROUPS:
        raise StoreError(
            f"{labels[0] or store.location}: more than {MAX_GROUPS} groups; group by "
            "attributes with fewer values"
        )
    for row in rows:
        side, values, runs, unattached, duplicates, spans_read = row[:6]
        summary = summaries[int(side) - 1]
        summary.unattached_spans += int(unattached)
        summary.duplicate_spans += int(duplicates)
        summary.spans += int(spans_read)
        if not int(runs):
            continue
        names = tuple(values)
        group_key = keys.setdefault(
            names, (("adk.app.name", names[0]), *zip(group_by, names[1:], strict=True))
        )
        _fold(summary.groups.setdefault(group_key, GroupSummary()), int(runs), row[6:])
    event = literal(sc.GEN_AI_EVALUATION_RESULT_EVENT)
    # Only the events' names are read to know whether any span carries a result.
    evaluated = store.rows(f"SELECT count() FROM {table} WHERE has(`Events.Name`, {event})")
    if int(evaluated[0][0]):
        for summary, selection in zip(summaries, selections, strict=True):
            _add_evaluations(store, table, selection, group_by, summary, keys)
    return summaries


def _fold(group: GroupSummary, runs: int, columns: list[Any]) -> None:
    """One group's counts (a row of :func:`summary_sql`) into its summary."""
    outcomes, errors, *figures = columns[: 2 + len(FIGURES)]
    paths, layers = columns[2 + len(FIGURES) :]
    group.runs += runs
    for key, count in _pairs(outcomes):
        group.outcomes[key] += count
    for key, count in _pairs(errors):
        group.error_runs[key] += count
    for figure, pairs in zip(FIGURES, figures, strict=True):
        distribution = getattr(group, figure.name)
        for value, count in _pairs(pairs):
            distribution.add(float(value), count)
    kept = sorted(_pairs(paths), key=lambda pair: (-pair[1], pair[0]))
    for key, count in kept[:MAX_PATHS]:
        group.paths[tuple(key.split(_SEP)) if key else ()] += count
    other = sum(count for _, count in kept[MAX_PATHS:])
    if other:  # paths beyond the commonest MAX_PATHS
        group.paths[OTHER_PATH] += other
    for key, count in _pairs(layers):
        kind, name, outcome, error, latency = key.split(_SEP)
        stats = group.layer(kind, name)
        stats.spans += count
        stats.outcomes[outcome or "ok"] += count
        if error:
            stats.errors[error] += count
        stats.latency_ms.add(float(latency), count)


def _pairs(column: list[list[Any]]) -> list[tuple[Any, int]]:
    """A ``sumMap`` result (keys, counts) as pairs."""
    keys, counts = column
    return [(key, int(count)) for key, count in zip(keys, counts, strict=True)]


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


__all__ = ["attribute", "runs_sql", "summarize_sides", "summarize_store", "summary_sql"]


def why_none_selected(store: Store, selection: Selection) -> str:
    """Why ``selection`` found no run, for the one line that says so: no
    invocation span at all, or per ``--where`` key the keys the runs have
    (with a did-you-mean) or the values they hold; keys and values as stored."""

    table = spans.checked_table(store)
    runs = invocation_sql()
    found = store.rows(
        "SELECT DISTINCT arrayJoin(arrayConcat(mapKeys(SpanAttributes), "
        f"mapKeys(ResourceAttributes))) FROM {table} WHERE {runs} LIMIT 1000"
    )
    if not found and not store.rows(f"SELECT 1 FROM {table} WHERE {runs} LIMIT 1"):
        return "no adk-otel invocation span"
    present = {str(row[0]) for row in found} | {"service.name"}
    reasons = []
    for key in selection.where:
        if key not in present:
            reasons.append(missing_key(key, present))
            continue
        column = "ServiceName" if key == "service.name" else attribute(key)
        values = store.rows(
            f"SELECT {column} AS value, count() FROM {table} WHERE {runs} "
            f"GROUP BY value ORDER BY count() DESC, value LIMIT {_VALUES_SHOWN + 1}"
        )
        shown = ", ".join(f"{row[0]!r} ({row[1]} runs)" for row in values[:_VALUES_SHOWN])
        more = ", ..." if len(values) > _VALUES_SHOWN else ""
        reasons.append(f"{key} holds {shown}{more}")
    return "; ".join(reasons) or "no run in that time or trace"


_VALUES_SHOWN = 8
