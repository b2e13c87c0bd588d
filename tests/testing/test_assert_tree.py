"""assert_tree: the compact expected-tree forms, partial matching and failure messages."""

from __future__ import annotations

import re

import pytest
import yaml

from adk_otel import semconv as sc
from adk_otel.traces.expect import assert_tree, tree_mismatch, unordered
from adk_otel.traces.io.model import SpanRecord
from adk_otel.traces.query import SpecError

from .builders import TraceBuilder, build_shop

K = sc.SpanKind
SHOP = build_shop().finished()


def concurrent_tools() -> list:
    """invoke_agent root > [execute_tool b, execute_tool a, generate_content m] (b starts first)."""
    b = TraceBuilder()
    with b.span(K.AGENT, "root"):
        for name in ("b", "a"):
            with b.span(K.TOOL, name):
                pass
        with b.span(K.MODEL, "m"):
            pass
    return b.finished()


@pytest.mark.parametrize(
    "expected",
    [
        "invocation shop",
        ("invocation shop", ["invoke_agent root"]),
        (
            "invocation shop",
            {"outcome": "error", "kind": "invocation"},
            [
                (
                    "invoke_agent root",
                    [
                        (
                            "generate_content scripted-model",
                            {"span_kind": "CLIENT", "status": "OK"},
                        ),
                        ("execute_tool lookup", [], {"outcome": "error", "error": "ValueError"}),
                    ],
                )
            ],
        ),
        ("invocation shop", [("invoke_agent root", ["generate_content scripted-model", ...])]),
        ("invocation shop", [("invoke_agent root", [..., "execute_tool lookup"])]),
        ("invocation shop", [("invoke_agent root", [...])]),
        ("invocation shop", [(re.compile(r"^invoke_agent"), [..., re.compile("lookup$")])]),
        (
            "invocation shop",
            [
                (
                    "invoke_agent root",
                    unordered("execute_tool lookup", "generate_content scripted-model"),
                )
            ],
        ),
        ["invocation shop"],
        [...],
        (
            "invocation shop",
            [
                (
                    "invoke_agent root",
                    [
                        ...,
                        (
                            "execute_tool lookup",
                            {
                                "error": "ValueError: no such sku",
                                "ended": True,
                                "attributes": {
                                    sc.GEN_AI_TOOL_NAME: "lookup",
                                    sc.ERROR_TYPE: re.compile("Value"),
                                    sc.ADK_OUTCOME: lambda v: v != "ok",
                                },
                            },
                        ),
                    ],
                )
            ],
        ),
    ],
)
def test_matching_trees_pass(expected) -> None:
    assert_tree(SHOP, expected)
    assert tree_mismatch(SHOP, expected) is None


def test_dict_form_from_yaml_matches() -> None:
    expected = yaml.safe_load(
        """
        name: invocation shop
        outcome: error
        children:
          - name: invoke_agent root
            children:
              - generate_content scripted-model
              - name: execute_tool lookup
                status: ERROR
                attributes: {gen_ai.tool.name: lookup}
              - "..."
        """
    )
    assert_tree(SHOP, expected)


def test_count_repeats_a_node() -> None:
    b = TraceBuilder()
    with b.span(K.AGENT, "loop"):
        for _ in range(3):
            with b.span(K.MODEL, "m"):
                pass
    assert_tree(b.finished(), ("invoke_agent loop", [("generate_content m", {"count": 3})]))
    with pytest.raises(AssertionError, match="expected 4 x 'generate_content m', found 3"):
        assert_tree(b.finished(), ("invoke_agent loop", [("generate_content m", {"count": 4})]))


def test_order_matters_unless_unordered() -> None:
    spans = concurrent_tools()
    in_order = ["execute_tool b", "execute_tool a", "generate_content m"]
    assert_tree(spans, ("invoke_agent root", in_order))
    swapped = ["execute_tool a", "execute_tool b", "generate_content m"]
    with pytest.raises(
        AssertionError,
        match="not in the expected order; actual order: 'execute_tool b', 'execute_tool a'",
    ):
        assert_tree(spans, ("invoke_agent root", swapped))
    assert_tree(spans, ("invoke_agent root", unordered(*swapped)))
    assert_tree(spans, {"name": "invoke_agent root", "ordered": False, "children": swapped})


def test_unordered_group_inside_an_ordered_list() -> None:
    spans = concurrent_tools()
    group = unordered("execute_tool a", "execute_tool b")
    assert_tree(spans, ("invoke_agent root", [group, "generate_content m"]))
    assert_tree(
        spans,
        {
            "name": "invoke_agent root",
            "children": [{"unordered": ["execute_tool a", "execute_tool b"]}, "..."],
        },
    )
    with pytest.raises(AssertionError) as e:
        assert_tree(spans, ("invoke_agent root", ["generate_content m", group]))
    assert "not in the expected order" in str(e.value)
    expected_tree = [
        "expected:",
        "invoke_agent root",
        "├─ generate_content m",
        "└─ (in any order)",
        "   ├─ execute_tool a",
        "   └─ execute_tool b",
    ]
    assert "\n".join(expected_tree) + "\n" in str(e.value)
    with pytest.raises(SpecError, match=r"\.\.\. inside an unordered group"):
        assert_tree(spans, ("invoke_agent root", [unordered("execute_tool a", ...)]))
    with pytest.raises(SpecError, match="unordered takes a non-empty list"):
        assert_tree(spans, ("invoke_agent root", [{"unordered": []}]))


def test_failure_shows_reason_then_both_trees() -> None:
    expected = (
        "invocation shop",
        [("invoke_agent root", [..., ("execute_tool lookup", {"outcome": "ok"})])],
    )
    with pytest.raises(AssertionError) as e:
        assert_tree(SHOP, expected)
    assert str(e.value) == (
        "span tree does not match: under invocation shop > invoke_agent root: "
        "'execute_tool lookup' does not match: outcome is 'error', expected 'ok'\n"
        "\n"
        "expected:\n"
        "invocation shop\n"
        "└─ invoke_agent root\n"
        "   ├─ ...\n"
        "   └─ execute_tool lookup  {outcome: 'ok'}\n"
        "\n"
        "actual (4 spans):\n"
        "invocation shop  ERROR error 10.0ms  [ValueError]\n"
        "└─ invoke_agent root  ERROR error 7.0ms  [ValueError]\n"
        "   ├─ generate_content scripted-model  OK ok 1.0ms\n"
        "   └─ execute_tool lookup  ERROR error 2.0ms  [ValueError: no such sku]"
    )


@pytest.mark.parametrize(
    ("expected", "reason"),
    [
        (
            ("invocation shop", [("invoke_agent root", ["execute_tool lookup"])]),
            "under invocation shop > invoke_agent root: unexpected span(s) "
            "'generate_content scripted-model' (add ... to allow others)",
        ),
        (
            ("invocation shop", [("invoke_agent root", [..., "execute_tool search"])]),
            "under invocation shop > invoke_agent root: no span 'execute_tool search'; found "
            "'generate_content scripted-model', 'execute_tool lookup'",
        ),
        (
            ("invocation shop", [("invoke_agent root", [])]),
            "under invocation shop > invoke_agent root: unexpected span(s) "
            "'generate_content scripted-model', 'execute_tool lookup' (add ... to allow others)",
        ),
        (
            (
                "invocation shop",
                [
                    (
                        "invoke_agent root",
                        [
                            "generate_content scripted-model",
                            "execute_tool lookup",
                            "generate_content scripted-model",
                        ],
                    )
                ],
            ),
            "under invocation shop > invoke_agent root: "
            "expected 2 x 'generate_content scripted-model', found 1",
        ),
        (
            ("invocation other", [...]),
            "at the top level: no span 'invocation other'; found 'invocation shop'",
        ),
        (
            ("invocation shop", [("invoke_agent root", {"attributes": {"adk.app.name": "shop"}})]),
            "under invocation shop: 'invoke_agent root' does not match: "
            "attribute adk.app.name is not set, expected 'shop'",
        ),
        (
            ("invocation shop", {"error": "KeyError"}),
            "at the top level: 'invocation shop' does not match: "
            "error is 'ValueError', expected 'KeyError'",
        ),
    ],
)
def test_mismatch_reasons(expected, reason: str) -> None:
    assert tree_mismatch(SHOP, expected) == reason
    with pytest.raises(AssertionError, match=re.escape(reason)):
        assert_tree(SHOP, expected)


def test_extra_root_is_reported() -> None:
    spans = [*SHOP, *build_shop().finished()]
    reason = tree_mismatch(spans, "invocation shop")
    assert (
        reason == "at the top level: unexpected span(s) 'invocation shop' (add ... to allow others)"
    )
    assert_tree(spans, ["invocation shop", "invocation shop"])
    assert_tree(spans, [("invocation shop", {"count": 2})])


@pytest.mark.parametrize(
    ("expected", "message"),
    [
        ({"name": "x", "outcom": "ok"}, "tree 'x': unknown key 'outcom' (did you mean 'outcome'?)"),
        (("x", {"stauts": "OK"}), "tree 'x': unknown key 'stauts' (did you mean 'status'?)"),
        (("x", {"status": "FINE"}), "tree 'x': status must be one of UNSET, OK, ERROR; got 'FINE'"),
        (("x", {"kind": "llm"}), "tree 'x': kind must be one of invocation, agent, model, tool"),
        (("x", {"count": 0}), "tree 'x': count must be a whole number >= 1; got 0"),
        (("x", {"ended": "yes"}), "tree 'x': ended must be true or false"),
        (("x", {"children": []}), "tree: 'children' goes in the tuple, not its dict"),
        ((["x"],), "tree: a tuple node starts with the span name"),
        (("x", "y"), "tree: expected a list of children or a dict; got 'y'"),
        ({"name_matches": "("}, "tree: name_matches is not a valid regex"),
        ({"name": "x", "children": "y"}, "tree 'x': children must be a list"),
        ({"name": "x", "ordered": False}, "tree 'x': ordered needs children"),
        (42, "tree: a node is a name, a tuple or a mapping; got 42"),
        (["a", {"name": "b", "nmae": 1}], "tree > [1] 'b': unknown key 'nmae'"),
    ],
)
def test_malformed_expectations_are_spec_errors(expected, message: str) -> None:
    with pytest.raises(SpecError, match=re.escape(message)):
        assert_tree(SHOP, expected)


def test_unended_spans_can_be_expected() -> None:
    b = TraceBuilder()
    with b.span(K.AGENT, "root", end=False) as span:
        record = SpanRecord.from_readable(span)
    assert_tree([record], ("invoke_agent root", {"ended": False}))
    with pytest.raises(AssertionError, match="ended is False, expected True"):
        assert_tree([record], ("invoke_agent root", {"ended": True}))


def test_every_difference_is_listed() -> None:
    """A child list that differs does not hide an unexpected sibling beside it."""
    b = TraceBuilder()
    with b.span(K.INVOCATION, "shop"):
        with b.span(K.AGENT, "root"), b.span(K.MODEL, "scripted-model"):
            pass
        with b.span(K.AGENT, "stray"):
            pass
    spans = b.finished()
    expected = ("invocation shop", [("invoke_agent root", ["execute_tool lookup"])])
    differences = [
        "under invocation shop > invoke_agent root: no span 'execute_tool lookup'; "
        "found 'generate_content scripted-model'",
        "under invocation shop: unexpected span(s) 'invoke_agent stray' (add ... to allow others)",
    ]
    assert tree_mismatch(spans, expected) == "; ".join(differences)
    with pytest.raises(AssertionError) as raised:
        assert_tree(spans, expected)
    assert str(raised.value).startswith(
        "span tree does not match: 2 differences:\n"
        + "\n".join(f"  - {difference}" for difference in differences)
    )
