"""TraceCapture on its own: isolation, unended tracking, ADK scope, snapshots."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from adk_otel import semconv as sc
from adk_otel.testing.capture import TraceCapture

from .builders import TraceBuilder, build_shop

K = sc.SpanKind


@pytest.fixture
def capture() -> Iterator[TraceCapture]:
    cap = TraceCapture()
    yield cap
    cap.shutdown()


def test_spans_of_its_own_provider_only(capture: TraceCapture) -> None:
    build_shop()  # another provider
    build_shop(TraceBuilder(capture.tracer_provider))
    assert len(capture.spans) == 4
    capture.query().tool("lookup").outcome("error").one()
    capture.assert_tree(("invocation shop", [("invoke_agent root", [...])]))
    assert capture.tree().startswith("invocation shop  ERROR error")


def test_unended_spans_are_tracked_until_they_end(capture: TraceCapture) -> None:
    b = TraceBuilder(capture.tracer_provider)
    with b.span(K.AGENT, "root"), b.span(K.TOOL, "slow", end=False) as slow:
        pass
    assert [r.name for r in capture.unended] == ["execute_tool slow"]
    assert [r.name for r in capture.spans] == ["invoke_agent root", "execute_tool slow"]
    with pytest.raises(
        AssertionError, match=r"1 span\(s\) started and never ended: 'execute_tool slow'"
    ) as e:
        capture.assert_all_ended()
    assert "└─ execute_tool slow  UNSET !! NOT ENDED" in str(e.value)
    slow.end()
    assert capture.unended == []
    capture.assert_all_ended()
    assert len(capture.spans) == 2


def test_clear_forgets_finished_spans(capture: TraceCapture) -> None:
    build_shop(TraceBuilder(capture.tracer_provider))
    capture.clear()
    assert capture.spans == []


def test_adk_scope_is_switched_off(capture: TraceCapture) -> None:
    adk_tracer = capture.tracer_provider.get_tracer(sc.ADK_SCOPE)
    ours = capture.tracer_provider.get_tracer(sc.INSTRUMENTATION_SCOPE)
    with adk_tracer.start_as_current_span("call_llm") as adk_span:
        assert not adk_span.is_recording()
        with ours.start_as_current_span("invoke_agent root") as span:
            assert span.is_recording()
    assert [r.name for r in capture.spans] == ["invoke_agent root"]


def test_snapshot_lifecycle(tmp_path) -> None:
    capture = TraceCapture(snapshot_dir=tmp_path / "snaps")
    build_shop(TraceBuilder(capture.tracer_provider))
    with pytest.raises(
        AssertionError, match=r"snapshot 'shop' does not exist .*--adk-otel-update-snapshots"
    ):
        capture.snapshot("shop")

    capture.update_snapshots = True
    capture.snapshot("shop")
    written = (tmp_path / "snaps" / "shop.txt").read_text()
    assert written.startswith("invocation shop  INTERNAL ERROR error")

    capture.update_snapshots = False
    capture.snapshot("shop")  # matches

    with capture.tracer_provider.get_tracer("t").start_as_current_span("extra"):
        pass
    with pytest.raises(AssertionError) as e:
        capture.snapshot("shop")
    assert "trace differs from snapshot 'shop'" in str(e.value)
    assert "+extra  INTERNAL UNSET" in str(e.value)
    capture.shutdown()


def test_snapshot_keeps_the_attributes_asked_for(tmp_path) -> None:
    capture = TraceCapture(snapshot_dir=tmp_path, update_snapshots=True)
    build_shop(TraceBuilder(capture.tracer_provider))
    capture.snapshot("tools", attributes={sc.GEN_AI_TOOL_NAME}, masked=())
    assert (tmp_path / "tools.txt").read_text().splitlines() == [
        "invocation shop  INTERNAL ERROR error  [ValueError: no such sku]",
        "│    event exception ValueError: no such sku",
        "└─ invoke_agent root  INTERNAL ERROR error  [ValueError: no such sku]",
        "   │    event exception ValueError: no such sku",
        "   ├─ generate_content scripted-model  CLIENT OK ok",
        "   └─ execute_tool lookup  INTERNAL ERROR error  [ValueError: no such sku]",
        '           gen_ai.tool.name = "lookup"',
        "           event exception ValueError: no such sku",
    ]
    capture.shutdown()


def test_snapshot_names_and_directory_are_checked(capture: TraceCapture, tmp_path) -> None:
    with pytest.raises(RuntimeError, match="needs snapshot_dir"):
        capture.snapshot("x")
    capture.snapshot_dir = tmp_path
    for bad in ("../escape", "a/b", "", ".hidden"):
        with pytest.raises(ValueError, match="snapshot name"):
            capture.snapshot(bad)
