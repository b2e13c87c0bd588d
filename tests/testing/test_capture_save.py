"""``adk_trace.save(path)`` and ``write_spans`` of records: a test's spans in
the file format the ``adk-otel`` command reads, read back unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest
from google.adk.agents import LlmAgent
from google.adk.runners import InMemoryRunner
from google.genai import types

from adk_otel import semconv as sc
from adk_otel.cli.main import main
from adk_otel.testing import ScriptedModel, call, reply
from adk_otel.testing.capture import TraceCapture
from adk_otel.traces import read_records, write_spans

from .builders import TraceBuilder


class OutOfStock(Exception):
    pass


def lookup(sku: str) -> dict[str, object]:
    """Stock level for a SKU."""
    if sku == "bad":
        raise OutOfStock(f"no such sku: {sku}")
    return {"sku": sku, "stock": 3, "price": 2.5}


async def _run(capture: TraceCapture, sku: str) -> None:
    model = ScriptedModel(script=[call("lookup", {"sku": sku}), reply("done")])
    agent = LlmAgent(name="clerk", model=model, tools=[lookup])
    runner = capture.instrument(InMemoryRunner(agent=agent, app_name="shop"))
    session = await runner.session_service.create_session(app_name="shop", user_id="u1")
    message = types.Content(role="user", parts=[types.Part(text="stock?")])
    try:
        async for _ in runner.run_async(user_id="u1", session_id=session.id, new_message=message):
            pass
    finally:
        await runner.close()


def _by_key(records: object) -> dict[tuple[str, str], object]:
    return {record.key: record for record in records}  # type: ignore[attr-defined]


@pytest.mark.asyncio
async def test_save_writes_what_the_cli_reads(adk_trace, tmp_path: Path, capsys) -> None:
    await _run(adk_trace, "A1")
    with pytest.raises(OutOfStock):
        await _run(adk_trace, "bad")
    path = adk_trace.save(tmp_path / "traces.jsonl")

    assert path == tmp_path / "traces.jsonl"
    assert _by_key(read_records([str(path)])) == _by_key(adk_trace.spans)
    assert main(["tree", str(path), "--no-color"]) == 0
    assert capsys.readouterr().out == adk_trace.tree() + "\n"
    # Saved again: the file is replaced, not appended to (two runs, two traces).
    adk_trace.save(path)
    assert len(read_records([str(path)])) == len(adk_trace.spans)
    adk_trace.save(path, append=True)
    assert len(read_records([str(path)])) == 2 * len(adk_trace.spans)


@pytest.mark.asyncio
async def test_write_spans_accepts_records(adk_trace, tmp_path: Path) -> None:
    await _run(adk_trace, "A1")
    path = tmp_path / "records.jsonl"
    write_spans(path, adk_trace.spans)
    back = read_records([str(path)])
    assert _by_key(back) == _by_key(adk_trace.spans)
    # And records read from a file are written back the same (a file to a file).
    again = tmp_path / "again.jsonl"
    write_spans(again, back)
    assert read_records([str(again)]) == back


def test_every_attribute_type_and_an_open_span_survive(tmp_path: Path, capsys) -> None:
    capture = TraceCapture()
    try:
        b = TraceBuilder(capture.tracer_provider)
        with b.span(sc.SpanKind.AGENT, "root") as root:
            root.set_attribute("a.float", 1.5)
            root.set_attribute("a.nan", float("nan"))
            root.set_attribute("a.list", ["x", "y"])
            root.set_attribute("a.ints", [1, 2])
            root.set_attribute("a.flag", True)
            root.add_event("note", {"n": 3})
            with b.span(sc.SpanKind.TOOL, "slow", end=False) as slow:
                pass
        records = capture.spans
        path = capture.save(tmp_path / "open.jsonl")
        back = read_records([str(path)])
        assert [r.name for r in back] == [r.name for r in records]
        assert back[-1].end_ns is None
        root_back = back[0]
        assert root_back.attributes["a.list"] == ("x", "y")
        assert root_back.attributes["a.ints"] == (1, 2)
        assert root_back.attributes["a.float"] == 1.5
        assert root_back.attributes["a.nan"] != root_back.attributes["a.nan"]
        assert root_back.events[0].attributes == {"n": 3}
        # Records only (the open span too), through write_spans.
        write_spans(tmp_path / "records.jsonl", records)
        assert read_records([str(tmp_path / "records.jsonl")])[-1].end_ns is None
        assert main(["tree", str(path), "--no-color"]) == 0
        assert "execute_tool slow  UNSET !! NOT ENDED" in capsys.readouterr().out
        slow.end()
    finally:
        capture.shutdown()
