"""Runs from a stream of span records, folded into distributions per group.

One run is one invocation span (``gen_ai.operation.name=invoke_workflow``).
Its agent, model and tool spans are found by the ``adk.invocation.id`` every
adk-otel span carries, in the same trace, in whatever order the files hold
them. While reading, a run is a few numbers and its step list (never its
spans); it is folded into its group's distributions when its invocation span
comes (files in export order) or at the end (any order), so a
:class:`Summary` holds counts and histograms per group, layer and path.

A path is the run's agent, tool and workflow node steps in start order, a step repeated
back to back written once: the route through the agents and tools. How often
a step repeats is what the calls per run measure.

Evaluation results (``gen_ai.evaluation.result``, docs/evaluations.md) join
the run whose invocation span they judge, by its trace and span id, and count
in that run's group: per metric, the case verdicts and scores. Log records are
read beside the spans and handed in; the span form (``evaluate`` spans) comes
in the stream, after the run it judges.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ... import semconv as sc
from ..io.evaluations import EvaluationResult, from_span_records
from ..io.model import SpanRecord, is_invocation
from .eval_summary import CaseKey, CaseTally, MetricSummary, add_to_tally, case_results
from .figures import ERROR_CATEGORY, FIGURES, LAYERS, STEP_NAME, STEP_NUMBERS
from .stats import Distribution

CONVERSATION = sc.GEN_AI_CONVERSATION_ID
OUTCOMES = ("ok", "error", "cancelled", "incomplete", "paused")
MAX_PATHS = 1000
"""Distinct paths kept per group; rarer ones beyond it count as ``(other)``."""
OTHER_PATH = ("(other)",)
NONE = "(none)"
_RECENT = 10_000
"""Runs remembered (by hash) after folding, to notice a span that comes after
its run's end; a later one, or a hash collision, just means reading again."""

GroupKey = tuple[tuple[str, str], ...]
Path = tuple[str, ...]


@dataclass
class LayerStats:
    """One agent, model or tool of a group: its spans' outcomes and latency."""

    spans: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    latency_ms: Distribution = field(default_factory=Distribution)

    def merge(self, other: LayerStats) -> None:
        self.spans += other.spans
        self.outcomes.update(other.outcomes)
        self.errors.update(other.errors)
        self.latency_ms.merge(other.latency_ms)


DISTRIBUTIONS = tuple(figure.name for figure in FIGURES)
"""A group's per-run distributions, by attribute name (a run's figures: figures.py)."""


@dataclass
class GroupSummary:
    """Everything a comparison needs of one group's runs, bounded in size."""

    runs: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    error_runs: Counter[str] = field(default_factory=Counter)
    """Runs with at least one failed span of each error category / type."""
    latency_ms: Distribution = field(default_factory=Distribution)
    input_tokens: Distribution = field(default_factory=Distribution)
    output_tokens: Distribution = field(default_factory=Distribution)
    tokens: Distribution = field(default_factory=Distribution)
    model_calls: Distribution = field(default_factory=Distribution)
    tool_calls: Distribution = field(default_factory=Distribution)
    paths: Counter[Path] = field(default_factory=Counter)
    layers: dict[tuple[str, str], LayerStats] = field(default_factory=dict)
    evaluations: dict[str, MetricSummary] = field(default_factory=dict)
    """Per metric, the case results judging this group's runs."""

    def metric(self, name: str) -> MetricSummary:
        return self.evaluations.setdefault(name, MetricSummary())

    def layer(self, kind: str, name: str) -> LayerStats:
        return self.layers.setdefault((kind, name), LayerStats())

    def merge(self, other: GroupSummary) -> None:
        self.runs += other.runs
        self.outcomes.update(other.outcomes)
        self.error_runs.update(other.error_runs)
        for name in DISTRIBUTIONS:
            getattr(self, name).merge(getattr(other, name))
        for path, count in other.paths.items():
            if path in self.paths or len(self.paths) < MAX_PATHS:
                self.paths[path] += count
            else:
                self.paths[OTHER_PATH] += count
        for layer, stats in other.layers.items():
            self.layer(*layer).merge(stats)
        for name, metric in other.evaluations.items():
            self.metric(name).merge(metric)

    def add_path(self, path: Path) -> None:
        if path in self.paths or len(self.paths) < MAX_PATHS:
            self.paths[path] += 1
        else:
            self.paths[OTHER_PATH] += 1


def pooled(groups: Iterable[GroupSummary]) -> GroupSummary:
    """Every group's runs as one group."""
    whole = GroupSummary()
    for group in groups:
        whole.merge(group)
    return whole


@dataclass
class Summary:
    """Per-group run distributions of one side of a comparison."""

    group_by: tuple[str, ...] = ()
    groups: dict[GroupKey, GroupSummary] = field(default_factory=dict)
    spans: int = 0
    unattached_spans: int = 0
    """adk-otel agent / model / tool spans whose invocation span was not there."""
    source: str = ""
    duplicate_spans: int = 0
    """Spans seen again (same trace and span id: an export retried, a file read
    twice), dropped: a span is counted once."""
    eval_cases: dict[CaseKey, CaseTally] = field(default_factory=dict)
    """Per eval case and metric, the verdicts (and, read from traces, a trace
    of each): what the pass-to-fail flips are found in."""
    unattached_evaluations: int = 0
    """Case results whose judged run was not there (no span context, or its
    invocation span not in the input): not counted."""

    @property
    def runs(self) -> int:
        return sum(group.runs for group in self.groups.values())

    @property
    def evaluations(self) -> int:
        """Case results counted, over every group and metric."""
        groups = self.groups.values()
        return sum(metric.results for group in groups for metric in group.evaluations.values())


@dataclass
class _Run:
    """A run while its spans are read: the invocation's facts and compact steps."""

    group: GroupKey | None = None
    outcome: str | None = None
    error: str | None = None
    latency_ms: float | None = None
    steps: list[tuple[int, str, str, str | None, str | None, float | None]] = field(
        default_factory=list
    )
    numbers: list[int] = field(default_factory=lambda: [0] * len(STEP_NUMBERS))
    """Its sums of figures.py's step numbers (tokens), in their order."""


def error_category(record: SpanRecord) -> str | None:
    """``adk.error.category`` of a failed span, else its error type."""
    if record.outcome != "error" and record.status_code != "ERROR":
        return None
    value = record.attributes.get(ERROR_CATEGORY)
    if isinstance(value, str) and value:
        return value
    error = record.error_type
    return str(error) if error else "error"


def _attribute(record: SpanRecord, name: str, joined: Mapping[str, Any] | None = None) -> str:
    """The span's attribute, else its resource's, else the label the run's
    eval results give it (``joined``: ``adk.eval.set.id`` and the like)."""
    value = record.attributes.get(name, record.resource.get(name))
    if value is None and joined is not None:
        value = joined.get(name)
    return NONE if value is None else str(value)


def _name(record: SpanRecord, kind: str) -> str:
    value = record.attributes.get(STEP_NAME[kind])
    if value is None:
        return record.name.split(" ", 1)[-1]
    return str(value)


class OutOfOrder(Exception):
    """A run's span came after its invocation span (``summarize(in_order=True)``)."""


def summarize(
    records: Iterable[SpanRecord],
    group_by: Iterable[str] = (),
    source: str = "",
    *,
    in_order: bool = False,
    evaluations: Iterable[EvaluationResult] = (),
    eval_set_results: Iterable[EvaluationResult] = (),
) -> Summary:
    """Fold a stream of span records into a :class:`Summary`.

    ``evaluations``: results read beside the spans (the log form), iterated
    once the records are; the span form is read from the stream. Each case
    result counts in the group of the run it judges (its trace and span id:
    the invocation span's).

    ``eval_set_results``: results naming their run by ADK's invocation id
    instead (read from ADK's eval set result files, ``adk eval``'s), iterated
    before the records: each joins the invocation span with that
    ``adk.invocation.id``, which also takes the eval set and case ids (and the
    invocation's index) they give as attributes for ``group_by`` where the span
    has none. A case result already read in the log or span form (same run,
    metric and case) counts once.

    ``in_order``: the input holds each run's spans before its invocation span
    (the order every exporter writes them in, as a span ends after its
    children), so a run is folded when its invocation span arrives and memory
    holds only runs in flight. A span that breaks the order raises
    :class:`OutOfOrder` (read again without ``in_order``), as does a span whose
    invocation span never comes. Without it, any order is fine and every run's
    few numbers are held until the end.
    """
    group_by = tuple(group_by)
    summary = Summary(group_by=group_by, source=source)
    runs: dict[tuple[str, str], _Run] = {}
    folded: OrderedDict[int, None] = OrderedDict()
    seen: set[int] = set()  # a span's (trace id, span id) hashed: a few bytes a span
    judged: dict[int, GroupKey] = {}  # an invocation span's (trace id, span id) hashed
    keys: dict[GroupKey, GroupKey] = {}
    results: list[EvaluationResult] = []  # the span form, as the stream brings it
    by_id, labels = _by_invocation(eval_set_results)
    runs_of: dict[str, tuple[str, str]] = {}  # invocation id -> its invocation span's key
    for record in records:
        identity = hash(record.key)
        if identity in seen:
            summary.duplicate_spans += 1
            continue
        seen.add(identity)
        summary.spans += 1
        if record.events:
            results += case_results(from_span_records([record]))
        invocation_id = record.attributes.get(sc.ADK_INVOCATION_ID)
        if is_invocation(record):
            key = (record.trace_id, str(invocation_id or record.span_id))
            if hash(key) in folded:
                raise OutOfOrder("an invocation span seen twice")
            run = runs.setdefault(key, _Run())
            app = record.attributes.get(sc.ADK_APP_NAME) or record.name.split(" ", 1)[-1]
            joined = labels.get(str(invocation_id)) if labels else None
            if joined is not None:
                runs_of.setdefault(str(invocation_id), record.key)
            group = (
                ("adk.app.name", str(app)),
                *((name, _attribute(record, name, joined)) for name in group_by),
            )
            run.group = keys.setdefault(group, group)  # one key object per group
            run.outcome = record.outcome or _status_outcome(record)
            run.error = error_category(record)
            run.latency_ms = record.duration_ms
            judged[hash((record.trace_id, record.span_id))] = run.group
            if in_order:
                _fold(summary.groups.setdefault(run.group, GroupSummary()), runs.pop(key))
                folded[hash(key)] = None
                if len(folded) > _RECENT:
                    folded.popitem(last=False)
            continue
        kind = record.adk_kind
        if kind not in LAYERS or invocation_id is None:
            continue
        key = (record.trace_id, str(invocation_id))
        if hash(key) in folded:
            raise OutOfOrder(f"a {kind} span after its invocation span")
        run = runs.setdefault(key, _Run())
        run.steps.append(
            (
                record.start_ns,
                kind,
                _name(record, kind),
                record.outcome or _status_outcome(record),
                error_category(record),
                record.duration_ms,
            )
        )
        for index, number in enumerate(STEP_NUMBERS):
            run.numbers[index] += number.of(kind, record.attributes)
    for run in runs.values():
        if run.group is None:
            if in_order:
                raise OutOfOrder("spans whose invocation span did not come first")
            summary.unattached_spans += len(run.steps)
            continue
        _fold(summary.groups.setdefault(run.group, GroupSummary()), run)
    # The log form last: read only once the spans were (their reader bounds the files).
    counted: set[int] = set()
    for result in [*results, *case_results(evaluations)]:
        judging = judged.get(hash((result.trace_id, result.span_id)))
        if judging is None or result.trace_id is None or judging not in summary.groups:
            summary.unattached_evaluations += 1
            continue
        summary.groups[judging].metric(result.name).add(result)
        add_to_tally(summary.eval_cases, result)
        counted.add(_identity(result))
    for invocation, found in by_id.items():
        span_key = runs_of.get(invocation)
        for result in found:
            judging = judged.get(hash(span_key)) if span_key is not None else None
            if span_key is None or judging is None or judging not in summary.groups:
                summary.unattached_evaluations += 1
                continue
            result = replace(result, trace_id=span_key[0], span_id=span_key[1])
            if _identity(result) in counted:
                continue  # also read from the log records or the span form
            summary.groups[judging].metric(result.name).add(result)
            add_to_tally(summary.eval_cases, result)
    return summary


def _by_invocation(
    results: Iterable[EvaluationResult],
) -> tuple[dict[str, list[EvaluationResult]], dict[str, dict[str, Any]]]:
    """Case results by the ADK invocation id they name (the case's last
    invocation), and the labels each invocation id gets from its results."""
    by_id: dict[str, list[EvaluationResult]] = {}
    labels: dict[str, dict[str, Any]] = {}
    unnamed: list[EvaluationResult] = []
    for result in results:
        invocation = result.attributes.get(sc.ADK_INVOCATION_ID)
        if not isinstance(invocation, str) or not invocation:
            unnamed += case_results([result])
            continue
        label = labels.setdefault(invocation, {})
        for name, value in (
            (sc.ADK_EVAL_SET_ID, result.eval_set_id),
            (sc.ADK_EVAL_CASE_ID, result.eval_case_id),
            (sc.ADK_EVAL_INVOCATION_INDEX, result.index if result.scope == "invocation" else None),
        ):
            if value is not None:
                label.setdefault(name, value)
        if result.scope == "case":
            by_id.setdefault(invocation, []).append(result)
    if unnamed:  # no run named: counted as unattached
        by_id[""] = unnamed
    return by_id, labels


def _identity(result: EvaluationResult) -> int:
    """One case result of one metric for one run, however it was read."""
    return hash((result.trace_id, result.span_id, result.name, result.eval_case_id, result.scope))


def _status_outcome(record: SpanRecord) -> str:
    if not record.ended:
        return "incomplete"
    return "error" if record.status_code == "ERROR" else "ok"


def _fold(group: GroupSummary, run: _Run) -> None:
    group.runs += 1
    group.outcomes[run.outcome or "ok"] += 1
    categories = {run.error} if run.error else set()
    path: list[str] = []
    kinds: Counter[str] = Counter()
    for _, kind, name, outcome, error, duration in sorted(run.steps, key=lambda s: s[0]):
        stats = group.layer(kind, name)
        stats.spans += 1
        stats.outcomes[outcome or "ok"] += 1
        if error:
            stats.errors[error] += 1
            categories.add(error)
        if duration is not None:
            stats.latency_ms.add(duration)
        kinds[kind] += 1
        if kind == "model":
            continue
        step = f"{kind}:{name}"
        if not path or path[-1] != step:
            path.append(step)
    group.error_runs.update(categories)
    for figure in FIGURES:
        value = figure.of(run.latency_ms, run.numbers, kinds)
        if value is not None:
            getattr(group, figure.name).add(value)
    group.add_path(tuple(path))
