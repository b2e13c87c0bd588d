"""Every way ADK serves an app, as real processes exporting over OTLP: ``adk
web``, ``adk api_server`` and a user's ``main.py`` with ``get_fast_api_app``
under uvicorn. One span per layer, none of ADK's own, and ADK's dev UI
endpoints answering from adk-otel's spans."""

from __future__ import annotations

import importlib.metadata
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from adk_otel.integrations.devui import EVENT_ID, INVOCATION_ID
from adk_otel.semconv import ADK_SCOPE, INSTRUMENTATION_SCOPE
from adk_otel.testing.receiver import OtlpReceiver
from adk_otel.traces.io.model import SpanRecord, as_records

from .servers import KINDS, WORKFLOW, Server, serving

ONE_PER_LAYER = {
    "invocation shop": 1,
    "invoke_agent clerk": 1,
    "generate_content scripted-model": 2,
    "execute_tool lookup": 1,
}
ADK_VERSION = tuple(int(p) for p in importlib.metadata.version("google-adk").split(".")[:2])


@pytest.fixture(scope="module")
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as rx:
        yield rx


@pytest.fixture(scope="module", params=KINDS)
def server(request, receiver, tmp_path_factory) -> Iterator[tuple[str, Server]]:
    root = tmp_path_factory.mktemp(request.param)
    with serving(request.param, root, receiver) as served:
        yield request.param, served
    assert "Failed to detach context" not in "".join(served.log)


def spans_of(receiver: OtlpReceiver, session_id: str) -> list[SpanRecord]:
    """Every span of the run in ``session_id`` (its trace), once all arrived."""

    def run_spans() -> list[SpanRecord]:
        records = as_records(receiver.requests)
        traces = {
            r.trace_id
            for r in records
            if r.name == "invocation shop"
            and r.attributes.get("gen_ai.conversation.id") == session_id
        }
        return [r for r in records if r.trace_id in traces]

    def complete(_: object) -> bool:
        names = Counter(r.name for r in run_spans() if r.scope == INSTRUMENTATION_SCOPE)
        return names == Counter(ONE_PER_LAYER)

    receiver.wait_for(complete, timeout=60)
    return run_spans()


def test_one_span_per_layer_and_none_of_adks(server, receiver) -> None:
    kind, served = server
    with httpx.Client(timeout=60) as client:
        session_id, events = served.run(client)
    assert events[-1]["content"]["parts"][0]["text"] == "ok"
    spans = spans_of(receiver, session_id)

    ours = [s for s in spans if s.scope == INSTRUMENTATION_SCOPE]
    assert Counter(s.name for s in ours) == Counter(ONE_PER_LAYER), kind
    assert {s.attributes["adk.outcome"] for s in ours} == {"ok"}
    assert {s.status_code for s in ours} == {"OK"}
    assert not [s for s in spans if s.scope == ADK_SCOPE], kind
    by_id = {s.span_id: s for s in ours}
    for span in ours:
        if span.name != "invocation shop":
            assert by_id[span.parent_id].name == (
                "invocation shop" if span.name == "invoke_agent clerk" else "invoke_agent clerk"
            )


def test_the_dev_ui_reads_the_run_from_our_spans(tmp_path: Path, receiver) -> None:
    """``adk web``: the session's trace holds adk-otel's spans, each model and
    tool span joined to its event, as the bundled UI requires."""
    with serving("web", tmp_path, receiver) as served, httpx.Client(timeout=60) as client:
        session_id, events = served.run(client)
        session = client.get(f"{served.url}/dev/apps/shop/debug/trace/session/{session_id}")
        per_event = {
            e["id"]: client.get(f"{served.url}/dev/apps/shop/debug/trace/{e['id']}") for e in events
        }
    assert session.status_code == 200
    spans = [s for s in session.json() if s["name"] in ONE_PER_LAYER]
    assert Counter(s["name"] for s in spans) == Counter(ONE_PER_LAYER)
    assert not [s for s in session.json() if s["name"].startswith("invoke_workflow")]

    model_events = [e["id"] for e in events if "functionResponse" not in e["content"]["parts"][0]]
    tool_events = [e["id"] for e in events if "functionResponse" in e["content"]["parts"][0]]
    assert len(model_events) == 2 and len(tool_events) == 1
    invocation_id = events[0]["invocationId"]
    models = [s for s in spans if s["name"].startswith("generate_content")]
    # What the UI's schema requires of each kind of span.
    assert [s["attributes"][EVENT_ID] for s in models] == model_events
    assert {s["attributes"][INVOCATION_ID] for s in models} == {invocation_id}
    (tool,) = [s for s in spans if s["name"] == "execute_tool lookup"]
    assert tool["attributes"][EVENT_ID] == tool_events[0]
    (agent,) = [s for s in spans if s["name"] == "invoke_agent clerk"]
    assert agent["attributes"]["gen_ai.conversation.id"] == session_id

    # The per-event trace: ADK 2.5's server keys it on tool spans (and on its
    # own `call_llm` spans, which nothing else makes), 2.13's on model spans too.
    keyed = tool_events + (model_events if ADK_VERSION >= (2, 13) else [])
    for event_id in keyed:
        assert per_event[event_id].status_code == 200, event_id
        assert per_event[event_id].json()[EVENT_ID] == event_id
    if ADK_VERSION >= (2, 13):
        # Requests and responses: ADK's own inference records, on our model spans.
        for span in models:
            (details,) = span["logs"]
            assert details["attributes"]["gen_ai.input.messages"]
            assert details["attributes"]["gen_ai.output.messages"]


ADK_KEPT = {"invoke_agent clerk", "execute_tool lookup", "generate_content scripted-model"}


def test_keep_adk_spans_keeps_them_under_the_server(tmp_path: Path, receiver) -> None:
    """With ADK_OTEL_KEEP_ADK_SPANS=true, ADK's own spans are in the run's
    trace, one connected tree under the server's span of the request (under
    ADK's run span where the server records none)."""
    with (
        serving("api_server", tmp_path, receiver, ADK_OTEL_KEEP_ADK_SPANS="true") as served,
        httpx.Client(timeout=60) as client,
    ):
        session_id, _ = served.run(client)
        spans_of(receiver, session_id)

        def trace() -> list[SpanRecord]:
            records = as_records(receiver.requests)
            (trace_id,) = {
                r.trace_id
                for r in records
                if r.name == "invocation shop"
                and r.attributes.get("gen_ai.conversation.id") == session_id
            }
            return [r for r in records if r.trace_id == trace_id]

        def whole(_: object) -> bool:  # the server's span ends last, after every other
            return any(r.parent_id is None for r in trace())

        receiver.wait_for(whole, timeout=60)
        spans = trace()
    by_id = {r.span_id: r for r in spans}
    listing = "\n".join(f"{r.name} [{r.scope}] {r.span_id} <- {r.parent_id}" for r in spans)
    (root,) = [r for r in spans if r.parent_id is None]
    # The server's span of the request where the server records HTTP spans (ADK 2.13's
    # FastAPI instrumentation), else ADK's run span (ADK 2.5 records none).
    http = [
        r
        for r in as_records(receiver.requests)
        if r.name == "POST /run" and r.scope not in (ADK_SCOPE, INSTRUMENTATION_SCOPE)
    ]
    if http:
        assert root.scope not in (ADK_SCOPE, INSTRUMENTATION_SCOPE), listing
        assert root.name == "POST /run", listing
    else:
        assert (root.scope, root.name) == (ADK_SCOPE, "invocation"), listing
    assert {r.name for r in spans if r.scope == ADK_SCOPE} >= ADK_KEPT, listing
    for span in spans:
        if span.scope != ADK_SCOPE:
            continue
        ancestor = span
        while ancestor.parent_id is not None:
            assert ancestor.parent_id in by_id, f"{span.name}: broken parent link\n{listing}"
            ancestor = by_id[ancestor.parent_id]
        assert ancestor is root, f"{span.name}\n{listing}"


WORKFLOW_RUN = {"invocation shop", "invoke_node prepare", "invoke_agent clerk", "application work"}


def _workflow_trace(receiver: OtlpReceiver, session_id: str) -> list[SpanRecord]:
    """The spans of the trace whose run is in ``session_id``, once all of its
    workflow run has arrived (the receiver is shared by this module's tests)."""
    records = as_records(receiver.requests)
    traces = {
        r.trace_id
        for r in records
        if r.name == "invocation shop" and r.attributes.get("gen_ai.conversation.id") == session_id
    }
    mine = [r for r in records if r.trace_id in traces]
    return mine if {r.name for r in mine} >= WORKFLOW_RUN else []


@pytest.mark.parametrize(
    ("kind", "env"),
    [("web", {}), ("api_server", {"OTEL_PYTHON_TRACER_PROVIDER": "adk_otel"})],
    ids=["web", "api_server-provider-variable"],
)
def test_a_workflow_app_under_the_server_gets_its_node_spans(
    kind: str, env: dict[str, str], tmp_path: Path, receiver
) -> None:
    """Zero-code: ADK's server builds its own provider, and adk-otel routes
    ADK's node tracing on it (or, with the standard
    OTEL_PYTHON_TRACER_PROVIDER=adk_otel, the provider is adk-otel's): the
    workflow's nodes, and the application's span inside one, are in the run's
    one tree, and ADK's dev UI still reads the run."""
    with (
        serving(kind, tmp_path, receiver, WORKFLOW, **env) as served,
        httpx.Client(timeout=60) as client,
    ):
        session_id, events = served.run(client)
        receiver.wait_for(lambda _: _workflow_trace(receiver, session_id), timeout=60)
        records = _workflow_trace(receiver, session_id)
        if kind == "web":
            session = client.get(f"{served.url}/dev/apps/shop/debug/trace/session/{session_id}")
    assert events[-1]["content"]["parts"][0]["text"] == "ok"
    by_id = {r.span_id: r for r in records}
    (invocation,) = [r for r in records if r.name == "invocation shop"]
    (prepare,) = [r for r in records if r.name == "invoke_node prepare"]
    (agent,) = [r for r in records if r.name == "invoke_agent clerk"]
    (work,) = [r for r in records if r.name == "application work"]
    assert by_id[prepare.parent_id] is invocation
    assert by_id[agent.parent_id] is invocation
    assert by_id[work.parent_id] is prepare
    assert not [r for r in records if r.scope == ADK_SCOPE]
    assert "nodes get no spans" not in "".join(served.log)
    if kind == "web":
        assert session.status_code == 200
        names = {s["name"] for s in session.json()}
        assert {"invocation shop", "invoke_node prepare", "invoke_agent clerk"} <= names
