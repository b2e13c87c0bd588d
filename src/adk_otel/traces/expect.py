"""Assert on the shape of a trace: the expected-tree spec and its matcher.

:func:`assert_tree` compares the whole tree with a compact picture of it. A
node is a span name (children not checked), or a tuple of the name with a
list of children and/or a dict of properties, in any order::

    assert_tree(spans, ("invocation shop", [
        ("invoke_agent root", [
            "generate_content scripted-model",
            ("execute_tool lookup", {"outcome": "error", "error": "ValueError"}),
            ...,                       # anything else may follow
        ]),
    ]))

The same tree as dicts (the form the CLI reads from YAML)::

    {"name": "invocation shop", "children": [
        {"name": "invoke_agent root", "children": [
            "...", {"name": "execute_tool lookup", "outcome": "error"}]}]}

Properties: ``kind`` (adk layer), ``span_kind`` (OpenTelemetry kind),
``status``, ``outcome``, ``error`` (``error.type``, its class name, or the
status message), ``attributes`` (values, callables or compiled regexes),
``ended``, ``count`` (this node N times in a row), ``name_matches`` (regex,
dict form) and ``ordered`` (dict form; :func:`unordered` in tuples).
Children are matched in order (start time, then name), exactly unless a
``...`` allows others at that point; ``unordered(a, b)`` (dict form:
``{"unordered": [a, b]}``) matches concurrent siblings in any order. A list
at the top matches several roots. Failures say what differs, then print the
expected and the actual tree.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .io.model import Forest, SpanNode, SpanRecord
from .query import (
    ADK_KINDS,
    OTEL_SPAN_KINDS,
    OUTCOMES,
    STATUS_CODES,
    SpecError,
    choose,
    error_matches,
    value_matches,
)
from .render import render_tree

_GAP_MARKERS = ("...",)
_PROPS: dict[str, Callable[[SpanRecord], Any]] = {
    # What a node of an expected tree may check, and how a span's value for it is read.
    "kind": lambda record: record.adk_kind,
    "span_kind": lambda record: record.kind,
    "status": lambda record: record.status_code,
    "outcome": lambda record: record.outcome,
    "error": lambda record: record.error_type or record.status_description,
    "ended": lambda record: record.ended,
}
_DICT_KEYS = ("name", "name_matches", *_PROPS, "attributes", "count", "children", "ordered")


class Unordered(list[Any]):
    """Siblings that may appear in any order (see :func:`unordered`)."""


def unordered(*children: Any) -> Unordered:
    """Siblings matched in any order, for concurrent calls. As the children
    list it covers all of them; inside a list, a run of consecutive siblings::

        ("invoke_agent root", unordered("execute_tool a", "execute_tool b", ...))
        ("invoke_agent root", ["generate_content m", unordered("execute_tool a",
                                                               "execute_tool b"), ...])
    """
    return Unordered(children)


class _Gap:
    def __repr__(self) -> str:
        return "..."


GAP = _Gap()


@dataclass(frozen=True, eq=False)
class ExpectedSpan:
    """One node of an expected tree (parsed from the tuple or dict form)."""

    name: str | None = None
    pattern: re.Pattern[str] | None = None
    props: tuple[tuple[str, Any], ...] = ()
    attributes: tuple[tuple[str, Any], ...] = ()
    children: ExpectedChildren | None = None
    count: int = 1

    def label(self, *, quoted: bool = False, count: bool = True) -> str:
        """How this node is shown: in the expected tree, or ``quoted`` in a sentence."""
        if self.pattern is not None:
            head = f"/{self.pattern.pattern}/"
        elif self.name is not None:
            head = repr(self.name) if quoted else self.name
        else:
            head = "<any span>"
        details = [f"{key}: {value!r}" for key, value in self.props]
        if self.attributes:
            attrs = ", ".join(f"{key}: {value!r}" for key, value in self.attributes)
            details.append(f"attributes: {{{attrs}}}")
        parts = [head]
        if details:
            parts.append("{" + ", ".join(details) + "}")
        if count and self.count != 1:
            parts.append(f"x{self.count}")
        if self.children is not None and not self.children.items:
            parts.append("(no children)")
        elif self.children is not None and not self.children.ordered:
            parts.append("(children in any order)")
        return "  ".join(parts)

    def selects(self, record: SpanRecord) -> bool:
        """Same name (or pattern): the span this node is most likely about."""
        if self.pattern is not None:
            return self.pattern.search(record.name) is not None
        return self.name is None or self.name == record.name

    def problems(self, record: SpanRecord) -> list[str]:
        """Why ``record`` itself (not its children) does not match; empty if it does."""
        found: list[str] = []
        if not self.selects(record):
            found.append(f"name is {record.name!r}")
        for key, expected in self.props:
            actual = _prop(record, key)
            ok = error_matches(expected, record) if key == "error" else actual == expected
            if not ok:
                found.append(f"{key} is {actual!r}, expected {expected!r}")
        for key, expected in self.attributes:
            present = key in record.attributes
            actual = record.attributes.get(key)
            if not value_matches(expected, actual, present):
                shown = f"{actual!r}" if present else "not set"
                found.append(f"attribute {key} is {shown}, expected {expected!r}")
        return found


def _prop(record: SpanRecord, key: str) -> Any:
    return _PROPS[key](record)


def _unrolled(items: Iterable[ExpectedSpan]) -> list[ExpectedSpan]:
    return [item for item in items for _ in range(item.count)]


@dataclass(frozen=True, eq=False)
class ExpectedGroup:
    """Consecutive siblings in any order (``unordered(...)`` inside a children list)."""

    items: tuple[ExpectedSpan, ...]

    @property
    def size(self) -> int:
        return sum(item.count for item in self.items)


_Item = ExpectedSpan | ExpectedGroup | _Gap


@dataclass(frozen=True)
class ExpectedChildren:
    items: tuple[_Item, ...] = field(default_factory=tuple)
    ordered: bool = True

    @property
    def open(self) -> bool:
        """A ``...`` somewhere: spans not listed are allowed."""
        return any(item is GAP for item in self.items)

    def flat(self) -> list[ExpectedSpan]:
        """Every expected span in order, groups flattened (``count`` not unrolled)."""
        found: list[ExpectedSpan] = []
        for item in self.items:
            if isinstance(item, ExpectedGroup):
                found.extend(item.items)
            elif isinstance(item, ExpectedSpan):
                found.append(item)
        return found

    def expanded(self) -> list[_Item]:
        """Items with ``count`` unrolled into repeats (a group stays one item)."""
        out: list[_Item] = []
        for item in self.items:
            out.extend([item] * (item.count if isinstance(item, ExpectedSpan) else 1))
        return out


def _is_gap(value: Any) -> bool:
    return value is Ellipsis or value is GAP or (isinstance(value, str) and value in _GAP_MARKERS)


def unknown_key(key: Any, allowed: tuple[str, ...], where: str) -> SpecError:
    """The error for a misspelt key, with the closest allowed one as a hint."""
    close = difflib.get_close_matches(str(key), allowed, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return SpecError(f"{where}: unknown key {key!r}{hint}; allowed: {', '.join(allowed)}")


def _check_prop(key: str, value: Any, where: str) -> Any:
    if key == "kind":
        return choose(value, ADK_KINDS, f"{where}: kind")
    if key == "span_kind":
        return choose(value, OTEL_SPAN_KINDS, f"{where}: span_kind", upper=True)
    if key == "status":
        return choose(value, STATUS_CODES, f"{where}: status", upper=True)
    if key == "outcome":
        return choose(value, OUTCOMES, f"{where}: outcome")
    if key == "ended":
        if not isinstance(value, bool):
            raise SpecError(f"{where}: ended must be true or false; got {value!r}")
        return value
    if not isinstance(value, str):  # error
        raise SpecError(f"{where}: error must be a string; got {value!r}")
    return value


def parse_node(spec: Any, where: str = "tree") -> ExpectedSpan:
    """One expected node from a name, a tuple or a dict; :class:`SpecError` if malformed."""
    if isinstance(spec, str):
        return ExpectedSpan(name=spec)
    if isinstance(spec, re.Pattern):
        return ExpectedSpan(pattern=spec)
    if isinstance(spec, tuple):
        if not spec or not isinstance(spec[0], str | re.Pattern):
            raise SpecError(f"{where}: a tuple node starts with the span name; got {spec!r}")
        fields: dict[str, Any] = {}
        fields["name_matches" if isinstance(spec[0], re.Pattern) else "name"] = spec[0]
        for part in spec[1:]:
            if isinstance(part, list):
                fields["children"] = part
            elif isinstance(part, Mapping):
                for key in part:
                    if key in ("name", "name_matches", "children"):
                        raise SpecError(f"{where}: {key!r} goes in the tuple, not its dict")
                fields.update(part)
            else:
                raise SpecError(f"{where}: expected a list of children or a dict; got {part!r}")
        return _parse_dict(fields, where)
    if isinstance(spec, Mapping):
        return _parse_dict(spec, where)
    raise SpecError(f"{where}: a node is a name, a tuple or a mapping; got {spec!r}")


def _parse_dict(spec: Mapping[str, Any], where: str) -> ExpectedSpan:
    name = spec.get("name")
    if name is not None and not isinstance(name, str):
        raise SpecError(f"{where}: name must be a string; got {name!r}")
    where = f"{where} {name!r}" if name else where
    for key in spec:
        if key not in _DICT_KEYS:
            raise unknown_key(key, _DICT_KEYS, where)
    pattern = spec.get("name_matches")
    if pattern is not None and not isinstance(pattern, re.Pattern):
        try:
            pattern = re.compile(str(pattern))
        except re.error as exc:
            raise SpecError(f"{where}: name_matches is not a valid regex ({exc})") from None
    count = spec.get("count", 1)
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise SpecError(f"{where}: count must be a whole number >= 1; got {count!r}")
    attributes = spec.get("attributes") or {}
    if not isinstance(attributes, Mapping):
        raise SpecError(f"{where}: attributes must be a mapping; got {attributes!r}")
    props = tuple((key, _check_prop(key, spec[key], where)) for key in _PROPS if key in spec)
    children = None
    if "children" in spec:
        ordered = spec.get("ordered", not isinstance(spec["children"], Unordered))
        if not isinstance(ordered, bool):
            raise SpecError(f"{where}: ordered must be true or false; got {ordered!r}")
        children = parse_children(spec["children"], where, ordered=ordered)
    elif "ordered" in spec:
        raise SpecError(f"{where}: ordered needs children")
    return ExpectedSpan(
        name=name,
        pattern=pattern,
        props=props,
        attributes=tuple((str(k), v) for k, v in attributes.items()),
        children=children,
        count=count,
    )


def parse_children(spec: Any, where: str = "tree", *, ordered: bool = True) -> ExpectedChildren:
    """A list of nodes (``...`` allowed) as :class:`ExpectedChildren`."""
    if isinstance(spec, Unordered):
        ordered = False
    if not isinstance(spec, list):
        raise SpecError(f"{where}: children must be a list; got {spec!r}")
    items: list[_Item] = []
    for i, item in enumerate(spec):
        at = f"{where} > [{i}]"
        if _is_gap(item):
            items.append(GAP)
        elif isinstance(item, Unordered) or (
            isinstance(item, Mapping) and set(item) == {"unordered"}
        ):
            group = _parse_group(item if isinstance(item, Unordered) else item["unordered"], at)
            items.extend(group.items if not ordered else [group])
        else:
            items.append(parse_node(item, at))
    return ExpectedChildren(items=tuple(items), ordered=ordered)


def _parse_group(spec: Any, where: str) -> ExpectedGroup:
    if not isinstance(spec, list) or not spec:
        raise SpecError(f"{where}: unordered takes a non-empty list of nodes; got {spec!r}")
    if any(_is_gap(item) for item in spec):
        raise SpecError(f"{where}: ... inside an unordered group; put it beside the group")
    return ExpectedGroup(tuple(parse_node(item, f"{where} > [{i}]") for i, item in enumerate(spec)))


def parse_tree(expected: Any) -> ExpectedChildren:
    """The top of an expected tree: one root node, or a list of roots."""
    if isinstance(expected, ExpectedChildren):
        return expected
    if isinstance(expected, list):
        return parse_children(expected, "tree")
    return ExpectedChildren(items=(parse_node(expected, "tree"),))


class _Matcher:
    """Tree matching with memoised node results (each pair is decided once)."""

    def __init__(self) -> None:
        self._memo: dict[tuple[int, int], bool] = {}

    def node(self, expected: ExpectedSpan, node: SpanNode) -> bool:
        key = (id(expected), id(node))
        if key not in self._memo:
            self._memo[key] = not expected.problems(node.record) and (
                expected.children is None or self.children(expected.children, node.children)
            )
        return self._memo[key]

    def children(self, expected: ExpectedChildren, nodes: list[SpanNode]) -> bool:
        if expected.ordered:
            return self._in_order(expected.expanded(), nodes)
        return self._any_order(_unrolled(expected.flat()), nodes, expected.open)

    def _in_order(self, items: list[_Item], nodes: list[SpanNode]) -> bool:
        memo: dict[tuple[int, int], bool] = {}

        def match(i: int, j: int) -> bool:
            if (i, j) not in memo:
                if i == len(items):
                    result = j == len(nodes)
                else:
                    item = items[i]
                    if isinstance(item, ExpectedSpan):
                        result = (
                            j < len(nodes) and self.node(item, nodes[j]) and match(i + 1, j + 1)
                        )
                    elif isinstance(item, ExpectedGroup):
                        end = j + item.size
                        result = (
                            end <= len(nodes)
                            and self._any_order(_unrolled(item.items), nodes[j:end], False)
                            and match(i + 1, end)
                        )
                    else:
                        result = match(i + 1, j) or (j < len(nodes) and match(i, j + 1))
                memo[(i, j)] = result
            return memo[(i, j)]

        return match(0, 0)

    def _any_order(self, items: list[ExpectedSpan], nodes: list[SpanNode], open_: bool) -> bool:
        if len(items) > len(nodes) or (not open_ and len(items) != len(nodes)):
            return False
        return len(self._assign(items, nodes)) == len(items)

    def _assign(self, items: list[ExpectedSpan], nodes: list[SpanNode]) -> dict[int, int]:
        """A maximum matching of items to nodes, order ignored: {node index: item index}."""
        owner: dict[int, int] = {}

        def assign(i: int, seen: set[int]) -> bool:
            for j, node in enumerate(nodes):
                if j in seen or not self.node(items[i], node):
                    continue
                seen.add(j)
                if j not in owner or assign(owner[j], seen):
                    owner[j] = i
                    return True
            return False

        for i in range(len(items)):
            assign(i, set())
        return owner

    # -- explaining a mismatch (best effort, only called after a failed match) ----

    def explain(self, expected: ExpectedChildren, nodes: list[SpanNode], where: str) -> list[str]:
        """Every difference between ``expected`` and ``nodes`` (at least one)."""
        items = _unrolled(expected.flat())
        owner = self._assign(items, nodes)
        placed = set(owner.values())
        used = set(owner)  # nodes matched, or explained as an expected span that differs
        found: list[str] = []
        for i, item in enumerate(items):
            if i in placed:
                continue
            full = [n for n in nodes if self.node(item, n)]
            if full:
                label = item.label(quoted=True, count=False)
                wanted = sum(1 for other in items if other.label(quoted=True, count=False) == label)
                found.append(f"{where}: expected {wanted} x {label}, found {len(full)}")
                continue
            found += self._explain_missing(item, nodes, where)
            near = (j for j, n in enumerate(nodes) if j not in used and item.selects(n.record))
            used.add(next(near, -1))
        names = ", ".join(repr(n.record.name) for n in nodes) or "none"
        if not expected.open and len(nodes) > len(items):
            extra = ", ".join(repr(n.record.name) for j, n in enumerate(nodes) if j not in used)
            if extra:
                found.append(f"{where}: unexpected span(s) {extra} (add ... to allow others)")
        if found:
            return found
        if expected.ordered:
            return [
                f"{where}: spans are there but not in the expected order; actual order: "
                f"{names} (use unordered(...) / ordered: false if order does not matter)"
            ]
        return [f"{where}: spans do not match; actual: {names}"]

    def _explain_missing(self, item: ExpectedSpan, nodes: list[SpanNode], where: str) -> list[str]:
        candidates = [n for n in nodes if item.selects(n.record)]
        if not candidates:
            names = ", ".join(repr(n.record.name) for n in nodes) or "no spans"
            return [f"{where}: no span {item.label(quoted=True)}; found {names}"]
        for node in candidates:
            if item.problems(node.record) or item.children is None:
                continue
            inner = " > ".join(n.record.name for n in node.path())
            return self.explain(item.children, node.children, f"under {inner}")
        record = candidates[0].record
        return [f"{where}: {record.name!r} does not match: {'; '.join(item.problems(record))}"]


def render_expected(expected: ExpectedChildren) -> str:
    """The expected tree drawn like the actual one."""
    lines: list[str] = []

    def draw(item: _Item, first: str, rest: str) -> None:
        children: tuple[_Item, ...] = ()
        if isinstance(item, ExpectedSpan):
            lines.append(first + item.label())
            children = item.children.items if item.children is not None else ()
        elif isinstance(item, ExpectedGroup):
            lines.append(first + "(in any order)")
            children = item.items
        else:
            lines.append(first + "...")
        for i, child in enumerate(children):
            last = i == len(children) - 1
            draw(child, rest + ("└─ " if last else "├─ "), rest + ("   " if last else "│  "))

    for item in expected.items:
        draw(item, "", "")
    return "\n".join(lines)


def tree_mismatches(spans: Forest | Iterable[Any], expected: Any) -> list[str]:
    """Every way the spans differ from the expected shape; empty when they match."""
    forest = spans if isinstance(spans, Forest) else Forest(spans)
    parsed = parse_tree(expected)
    matcher = _Matcher()
    if matcher.children(parsed, forest.roots):
        return []
    return matcher.explain(parsed, forest.roots, "at the top level")


def tree_mismatch(spans: Forest | Iterable[Any], expected: Any) -> str | None:
    """Why the spans do not have the expected shape (every difference, joined
    by ``; ``), or None when they do."""
    return "; ".join(tree_mismatches(spans, expected)) or None


def assert_tree(spans: Forest | Iterable[Any], expected: Any) -> None:
    """Assert the trace has the ``expected`` shape (see the module docstring).

    The AssertionError says what differs first, then shows both trees.
    """
    forest = spans if isinstance(spans, Forest) else Forest(spans)
    parsed = parse_tree(expected)
    reasons = tree_mismatches(forest, parsed)
    if not reasons:
        return
    reason = (
        reasons[0]
        if len(reasons) == 1
        else f"{len(reasons)} differences:\n" + "\n".join(f"  - {r}" for r in reasons)
    )
    raise AssertionError(
        f"span tree does not match: {reason}\n\nexpected:\n{render_expected(parsed)}\n\n"
        f"actual ({len(forest)} spans):\n{render_tree(forest)}"
    )
