"""Find spans, and assert on the shape of a trace.

:class:`SpanQuery` narrows a set of spans step by step and ends in an
assertion that explains itself::

    q = SpanQuery(spans)
    lookup = q.tool("lookup").under(q.agent("root")).one()
    q.status("ERROR").none()          # fails listing every error span

Expected trees (:func:`assert_tree`) live in :mod:`adk_otel.traces.expect`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from .. import semconv as sc
from .io.evaluations import EvaluationResult
from .io.model import Forest, SpanRecord
from .render import describe, render_tree

STATUS_CODES = ("UNSET", "OK", "ERROR")
OTEL_SPAN_KINDS = ("INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER")
ADK_KINDS = tuple(kind.value for kind in sc.SpanKind)
OUTCOMES = tuple(outcome.value for outcome in sc.Outcome)


class SpecError(ValueError):
    """An expected tree or spec that cannot be understood (one-line message)."""


# -- shared value checks ---------------------------------------------------------


class _Present:
    def __repr__(self) -> str:
        return "<present>"


PRESENT: Any = _Present()
"""Attribute expectation meaning "set, to anything"."""


def value_matches(expected: Any, actual: Any, present: bool = True) -> bool:
    """Equality, a compiled regex (``search`` on ``str(actual)``) or a predicate."""
    if expected is PRESENT:
        return present
    if not present:
        return False
    if isinstance(expected, re.Pattern):
        return expected.search(str(actual)) is not None
    if callable(expected) and not isinstance(expected, type):
        return bool(expected(actual))
    if isinstance(expected, list | tuple) and isinstance(actual, list | tuple):
        return tuple(expected) == tuple(actual)
    return bool(expected == actual)


def choose(value: Any, choices: tuple[str, ...], what: str, upper: bool = False) -> str:
    text = getattr(value, "name", None) if upper and not isinstance(value, str) else None
    text = str(getattr(value, "value", value) if text is None else text)
    text = text.upper() if upper else text
    if text not in choices:
        raise SpecError(f"{what} must be one of {', '.join(choices)}; got {value!r}")
    return text


def error_matches(expected: str, record: SpanRecord) -> bool:
    """``error.type`` in full or by class name, or the exact status message."""
    kind = record.error_type or ""
    return expected in (kind, kind.rsplit(".", 1)[-1]) or expected == record.status_description


# -- SpanQuery -------------------------------------------------------------------

_Predicate = Callable[[SpanRecord, Forest], bool]


def _span_path(forest: Forest, record: SpanRecord) -> str:
    names = [r.name for r in reversed(forest.ancestors(record))]
    return " > ".join([*names, record.name])


class SpanQuery:
    """An immutable, chainable filter over spans; every filter returns a new query.

    Accepts :class:`SpanRecord`, SDK spans, OTLP protobuf spans or requests.
    Results come in tree order (depth first, siblings by start time).
    """

    def __init__(
        self,
        spans: Forest | Iterable[Any],
        *,
        evaluations: Iterable[EvaluationResult] = (),
        _filters: tuple[tuple[str, _Predicate], ...] = (),
    ) -> None:
        self.forest: Forest = spans if isinstance(spans, Forest) else Forest(spans)
        self._filters = _filters
        self._evaluations = tuple(evaluations)
        """Evaluation results beside the spans (``traces.evaluations``)."""

    # -- building --------------------------------------------------------------

    def where(self, predicate: Callable[[SpanRecord], bool], description: str = "") -> SpanQuery:
        """Spans for which ``predicate(record)`` is true."""
        label = description or getattr(predicate, "__name__", "predicate")
        return self._with(label, lambda record, _forest: bool(predicate(record)))

    def _with(self, description: str, predicate: _Predicate) -> SpanQuery:
        return SpanQuery(
            self.forest,
            evaluations=self._evaluations,
            _filters=(*self._filters, (description, predicate)),
        )

    def named(self, name: str | re.Pattern[str]) -> SpanQuery:
        """Exact span name, or a compiled regex (``search``, like ``pytest.raises(match=)``)."""
        label = f"name ~ /{name.pattern}/" if isinstance(name, re.Pattern) else f"name {name!r}"
        return self._with(label, lambda record, _f: value_matches(name, record.name))

    def matching(self, pattern: str) -> SpanQuery:
        """Span name matches the regex ``pattern`` (``re.search``)."""
        return self.named(re.compile(pattern))

    def kind(self, kind: str) -> SpanQuery:
        """The ADK layer: ``invocation``, ``agent``, ``model`` or ``tool``."""
        value = choose(kind, ADK_KINDS, "kind")
        return self._with(f"kind {value}", lambda record, _f: record.adk_kind == value)

    def span_kind(self, kind: str) -> SpanQuery:
        """The OpenTelemetry span kind (``INTERNAL``, ``CLIENT``...)."""
        value = choose(kind, OTEL_SPAN_KINDS, "span_kind", upper=True)
        return self._with(f"span_kind {value}", lambda record, _f: record.kind == value)

    def _layer(self, kind: sc.SpanKind, key: str, value: Any) -> SpanQuery:
        query = self.kind(kind)
        if value is None:
            return query
        label = f"{kind.value} {value!r}"
        return query._with(
            label, lambda record, _f: value_matches(value, record.attributes.get(key))
        )

    def invocation(self, app: str | None = None) -> SpanQuery:
        """Invocation spans, of the app ``app`` if given."""
        return self._layer(sc.SpanKind.INVOCATION, sc.ADK_APP_NAME, app)

    def agent(self, name: str | re.Pattern[str] | None = None) -> SpanQuery:
        """Agent-run spans, of the agent ``name`` if given."""
        return self._layer(sc.SpanKind.AGENT, sc.GEN_AI_AGENT_NAME, name)

    def model(self, name: str | re.Pattern[str] | None = None) -> SpanQuery:
        """Model-call spans, for the requested model ``name`` if given."""
        return self._layer(sc.SpanKind.MODEL, sc.GEN_AI_REQUEST_MODEL, name)

    def tool(self, name: str | re.Pattern[str] | None = None) -> SpanQuery:
        """Tool-call spans, of the tool ``name`` if given."""
        return self._layer(sc.SpanKind.TOOL, sc.GEN_AI_TOOL_NAME, name)

    def node(self, name: str | re.Pattern[str] | None = None) -> SpanQuery:
        """Workflow node-run spans (a tool node's span, which is its tool
        call's, included), of the node ``name`` if given."""
        query = self._with("node", lambda record, _f: sc.ADK_NODE_NAME in record.attributes)
        if name is None:
            return query
        return query._with(
            f"node {name!r}",
            lambda record, _f: value_matches(name, record.attributes.get(sc.ADK_NODE_NAME)),
        )

    def attempt(self, number: int) -> SpanQuery:
        """Node spans of attempt ``number`` (1: the first; 2: the first retry)."""
        return self._numbered(sc.ADK_NODE_ATTEMPT, number, "attempt")

    def iteration(self, number: int) -> SpanQuery:
        """Spans of a ``LoopAgent``'s pass ``number`` (from 1)."""
        return self._numbered(sc.ADK_LOOP_ITERATION, number, "iteration")

    def branch(self, name: str | re.Pattern[str]) -> SpanQuery:
        """Spans of a ``ParallelAgent``'s branch ``name``."""
        return self._with(
            f"branch {name!r}",
            lambda record, _f: value_matches(name, record.attributes.get(sc.ADK_PARALLEL_BRANCH)),
        )

    def _numbered(self, key: str, number: int, what: str) -> SpanQuery:
        if isinstance(number, bool) or not isinstance(number, int) or number < 1:
            raise SpecError(f"{what} must be a whole number from 1; got {number!r}")
        return self._with(
            f"{what} {number}", lambda record, _f: record.attributes.get(key) == number
        )

    def status(self, code: Any) -> SpanQuery:
        """Status ``OK``, ``ERROR`` or ``UNSET`` (a ``StatusCode`` works too)."""
        value = choose(code, STATUS_CODES, "status", upper=True)
        return self._with(f"status {value}", lambda record, _f: record.status_code == value)

    def outcome(self, outcome: str) -> SpanQuery:
        """``adk.outcome``: ``ok``, ``error``, ``cancelled`` or ``incomplete``."""
        value = choose(outcome, OUTCOMES, "outcome")
        return self._with(f"outcome {value}", lambda record, _f: record.outcome == value)

    def error(self, expected: str) -> SpanQuery:
        """Spans whose error is ``expected`` (see :func:`error_matches`)."""
        return self._with(f"error {expected!r}", lambda record, _f: error_matches(expected, record))

    def attr(self, key: str, expected: Any = PRESENT) -> SpanQuery:
        """Attribute ``key`` equal to ``expected`` (or regex / predicate; set at all by default)."""
        label = f"{key} set" if expected is PRESENT else f"{key} = {expected!r}"
        return self._with(
            label,
            lambda record, _f: value_matches(
                expected, record.attributes.get(key), key in record.attributes
            ),
        )

    def unended(self) -> SpanQuery:
        """Spans that were started and never ended."""
        return self._with("not ended", lambda record, _f: not record.ended)

    def under(self, other: SpanQuery | SpanRecord | Iterable[SpanRecord]) -> SpanQuery:
        """Descendants (any depth) of the spans ``other`` selects."""
        label, keys = _selection(other)
        cache: list[tuple[Forest, set[tuple[str, str]]]] = []

        def descendants(forest: Forest) -> set[tuple[str, str]]:
            # One walk, parents before children, for the whole forest: asking
            # each span's ancestors costs depth squared on a deep trace.
            if not cache or cache[0][0] is not forest:
                inside: set[int] = set()
                for node, _ in forest.walk():
                    parent = node.parent
                    if parent is not None and (id(parent) in inside or parent.record.key in keys()):
                        inside.add(id(node))
                keys_inside = {n.record.key for n, _ in forest.walk() if id(n) in inside}
                cache[:] = [(forest, keys_inside)]
            return cache[0][1]

        return self._with(
            f"under ({label})", lambda record, forest: record.key in descendants(forest)
        )

    def children_of(self, other: SpanQuery | SpanRecord | Iterable[SpanRecord]) -> SpanQuery:
        """Direct children of the spans ``other`` selects."""
        label, keys = _selection(other)
        return self._with(
            f"child of ({label})",
            lambda record, forest: (
                record.parent_id is not None and (record.trace_id, record.parent_id) in keys()
            ),
        )

    # -- results ---------------------------------------------------------------

    @property
    def description(self) -> str:
        return ", ".join(label for label, _ in self._filters) or "any span"

    def all(self) -> list[SpanRecord]:
        """Every matching span, in tree order."""
        return [
            node.record
            for node, _ in self.forest.walk()
            if all(predicate(node.record, self.forest) for _, predicate in self._filters)
        ]

    def __iter__(self) -> Iterator[SpanRecord]:
        return iter(self.all())

    def evaluations(
        self,
        name: str | None = None,
        *,
        label: str | None = None,
        case: str | None = None,
        scope: str | None = None,
    ) -> list[EvaluationResult]:
        """The evaluation results judging the matching spans (all results
        when no filter was applied), narrowed by metric ``name``, ``label``
        (``pass``/``fail``), eval ``case`` id and ``scope``
        (``invocation``/``case``)::

            q.invocation().attr("adk.eval.case.id", "refund").evaluations(label="fail")
        """
        results: Iterable[EvaluationResult] = self._evaluations
        if self._filters:
            keys = {record.key for record in self.all()}
            results = [r for r in results if (r.trace_id, r.span_id) in keys]
        return [
            r
            for r in results
            if (name is None or r.name == name)
            and (label is None or r.label == label)
            and (case is None or r.eval_case_id == case)
            and (scope is None or r.scope == scope)
        ]

    def __len__(self) -> int:
        return len(self.all())

    def __repr__(self) -> str:
        return f"<SpanQuery {self.description}: {len(self)} of {len(self.forest)} spans>"

    def one(self) -> SpanRecord:
        """The single matching span; AssertionError showing the tree otherwise."""
        found = self.all()
        if len(found) != 1:
            raise AssertionError(self._failure("exactly 1 span", found))
        return found[0]

    def first(self) -> SpanRecord:
        """The first matching span in tree order; AssertionError when none."""
        found = self.all()
        if not found:
            raise AssertionError(self._failure("at least 1 span", found))
        return found[0]

    def count(self, expected: int) -> SpanQuery:
        """Assert exactly ``expected`` spans match; returns the query for chaining."""
        found = self.all()
        if len(found) != expected:
            raise AssertionError(self._failure(f"{expected} span(s)", found))
        return self

    def exists(self) -> SpanQuery:
        """Assert at least one span matches; returns the query for chaining."""
        found = self.all()
        if not found:
            raise AssertionError(self._failure("at least 1 span", found))
        return self

    def none(self) -> None:
        """Assert no span matches."""
        found = self.all()
        if found:
            raise AssertionError(self._failure("no span", found))

    def _failure(self, wanted: str, found: list[SpanRecord]) -> str:
        lines = [f"expected {wanted} where {self.description}; found {len(found)}"]
        lines.extend(
            f"  - {_span_path(self.forest, record)}  ({describe(record).split('  ', 1)[-1]})"
            for record in found[:20]
        )
        if len(found) > 20:
            lines.append(f"  ... and {len(found) - 20} more")
        lines += ["", f"actual trace ({len(self.forest)} spans):", render_tree(self.forest)]
        return "\n".join(lines)


def _selection(
    other: SpanQuery | SpanRecord | Iterable[SpanRecord],
) -> tuple[str, Callable[[], set[tuple[str, str]]]]:
    """A label and the (lazily computed, then cached) keys of the spans ``other`` selects."""
    if isinstance(other, SpanQuery):
        label, compute = other.description, lambda: {record.key for record in other.all()}
    elif isinstance(other, SpanRecord):
        label, compute = repr(other.name), lambda: {other.key}
    else:
        records = list(other)
        label, compute = ", ".join(repr(r.name) for r in records), lambda: {r.key for r in records}
    return label, functools.cache(compute)
