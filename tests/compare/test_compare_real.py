"""``compare`` on real trace sets: real ADK runs on scripted models, exported by
the SDK's OTLP exporter to the test receiver, written in the collector file
exporter's layouts; and the two-process A2A demo's trace."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cli.collector_files import file_bytes
from google.adk.agents import LlmAgent
from google.adk.runners import InMemoryRunner
from google.genai import types
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from adk_otel import instrument
from adk_otel.cli.main import main
from adk_otel.testing import ScriptedModel, call, compare, reply
from adk_otel.testing.receiver import OtlpReceiver
from adk_otel.traces.comparisons.runs import summarize
from adk_otel.traces.io.files import iter_records

RUNS = 8


def lookup(sku: str) -> dict[str, Any]:
    """Stock level for a SKU."""
    return {"sku": sku, "stock": 3}


def _broken() -> Any:
    def lookup(sku: str) -> dict[str, Any]:
        """Stock level for a SKU (a release that broke it)."""
        raise TimeoutError("inventory service timed out")

    return lookup


def search(query: str) -> list[str]:
    """Find SKUs."""
    return ["A1"]


def _script(variant: str) -> list[Any]:
    if variant == "detour":  # the candidate searches first: another path, one call more
        return [call("search", {"query": "A1"}), call("lookup", {"sku": "A1"}), reply("ok")]
    return [call("lookup", {"sku": "A1"}), reply("in stock")]


async def _run(runner: InMemoryRunner) -> None:
    session = await runner.session_service.create_session(app_name="shop", user_id="u1")
    message = types.Content(role="user", parts=[types.Part(text="is A1 in stock?")])
    try:
        async for _ in runner.run_async(user_id="u1", session_id=session.id, new_message=message):
            pass
    except TimeoutError:
        pass  # the broken release's runs fail; their traces say so


def export_runs(*variants: str) -> list[list[Any]]:
    """RUNS real runs of app "shop" per variant, as the OTLP exporter sent them.

    The variants' runs alternate, one of each in turn, so that every set sees the
    machine as busy as the others: two sets of the same runs then differ in
    latency by chance only, which is what the latency gate's statistics assume.
    Recorded one set after the other, on a shared machine whose load changes
    within seconds, two sets of the same runs differ by how busy the machine was
    in each (a p95 x2.42 at load 8), and the gate rightly calls that slower."""
    with contextlib.ExitStack() as stack:
        receivers = [stack.enter_context(OtlpReceiver()) for _ in variants]
        providers = []
        for receiver in receivers:
            provider = TracerProvider(resource=Resource.create({"service.name": "shop"}))
            exporter = OTLPSpanExporter(endpoint=receiver.http_endpoint, timeout=5)
            provider.add_span_processor(SimpleSpanProcessor(exporter))
            providers.append(provider)
        for _ in range(RUNS):
            for variant, provider in zip(variants, providers, strict=True):
                tools = {"broken": [_broken()], "detour": [search, lookup]}.get(variant, [lookup])
                model = ScriptedModel(script=_script(variant))
                agent = LlmAgent(name="root", model=model, tools=tools)
                runner = instrument(
                    InMemoryRunner(agent=agent, app_name="shop"), tracer_provider=provider
                )
                asyncio.run(_run(runner))
        sent = []
        for variant, provider, receiver in zip(variants, providers, receivers, strict=True):
            provider.shutdown()
            spans = RUNS * (5 if variant == "detour" else 4)
            receiver.wait_for(spans if variant != "broken" else RUNS * 3)
            sent.append(list(receiver.requests))
        return sent


@pytest.fixture(scope="module")
def trace_sets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each variant's runs as a directory of collector files, each in another layout:
    baseline a rotated json set, the others proto+zstd, json.gz and json+native-zstd."""
    root = tmp_path_factory.mktemp("real")
    layouts = {
        "baseline": "json",
        "again": "proto+zstd",
        "broken": "json.gz",
        "detour": "json+native-zstd",
    }
    out = {}
    sent = export_runs(*({"baseline": "ok", "again": "ok"}.get(name, name) for name in layouts))
    for (name, layout), requests in zip(layouts.items(), sent, strict=True):
        folder = root / name
        folder.mkdir()
        if name == "baseline":  # rotated: an older file and the current one
            half = len(requests) // 2
            (folder / "traces-2026-11-25T06-00-00.000.json").write_bytes(
                file_bytes(layout, requests[:half])
            )
            (folder / "traces.json").write_bytes(file_bytes(layout, requests[half:]))
        else:
            (folder / f"traces.{layout}").write_bytes(file_bytes(layout, requests))
        out[name] = folder
    return out


def test_real_exports_come_in_export_order_so_runs_fold_one_by_one(trace_sets) -> None:
    # Each run's spans before its invocation span, in every layout: no second reading.
    for folder in trace_sets.values():
        assert summarize(iter_records([str(folder)]), in_order=True).runs == RUNS


def test_two_sets_of_good_runs_compare_clean(trace_sets) -> None:
    result = compare(trace_sets["baseline"], trace_sets["again"])
    assert result.ok, result.report()
    (group,) = result.comparison.groups
    assert group.label == "shop" and group.baseline and group.baseline.runs == RUNS
    assert [share.path for share in group.paths] == [("agent:root", "tool:lookup")]
    assert {(row.kind, row.name) for row in group.layers} == {
        ("agent", "root"),
        ("model", "scripted-model"),
        ("tool", "lookup"),
    }
    assert group.baseline.input_tokens and group.baseline.model_calls == 2


def test_a_broken_tool_trips_the_errors_gate_only(trace_sets) -> None:
    # Every gate but latency: these are real runs, whose timing follows how busy
    # the machine was (the latency gate is tested on controlled samples).
    gates = ["errors", "tokens=+10%", "calls=+10%", "path"]
    result = compare(trace_sets["baseline"], trace_sets["broken"], fail_on=gates)
    assert result.tripped_gates == ["errors"], result.report()
    report = result.report()
    # The failure taxonomy names it: a tool that raised is `tool_exception` on every layer.
    assert "runs hitting tool_exception (new)" in report
    new = [f for f in result.comparison.findings if f.new and f.gate == "errors"]
    assert [f.subject for f in new] == ["runs hitting tool_exception"]


def test_a_detour_trips_path_calls_and_tokens_and_shows_where_it_diverges(trace_sets) -> None:
    # The detour costs a model call more, and that call's tokens: three gates, rightly.
    # It also takes longer (a tool call and a model call more), so whether the
    # latency gate trips depends on how busy the machine was: either is right.
    result = compare(trace_sets["baseline"], trace_sets["detour"])
    tripped = set(result.tripped_gates)
    assert {"calls", "path", "tokens"} <= tripped <= {"calls", "path", "tokens", "latency"}, (
        result.report()
    )
    assert "errors" not in tripped
    (divergence,) = result.comparison.groups[0].divergences
    assert (divergence.step, divergence.after) == (2, "agent:root")
    assert (divergence.baseline_step, divergence.candidate_step) == (None, "tool:search")
    assert "tools only in the candidate: search" in " ".join(result.comparison.warnings)


def test_a_committed_summary_stands_for_its_traces(trace_sets, tmp_path, capsys) -> None:
    summary = tmp_path / "baseline.summary.json"
    assert main(["summarize", str(trace_sets["baseline"]), "-o", str(summary)]) == 0
    capsys.readouterr()  # summarize's report, before compare's JSON
    assert (
        main(
            [
                "compare",
                str(summary),
                str(trace_sets["broken"]),
                "--fail-on",
                "errors",
                "--format",
                "json",
            ]
        )
        == 1
    )
    via = json.loads(capsys.readouterr().out)
    assert (
        main(
            [
                "compare",
                str(trace_sets["baseline"]),
                str(trace_sets["broken"]),
                "--fail-on",
                "errors",
                "--format",
                "json",
            ]
        )
        == 1
    )
    direct = json.loads(capsys.readouterr().out)
    for document in (via, direct):
        document["baseline"].pop("source")
    assert via == direct


def test_grouping_per_conversation_makes_each_run_its_own_case(trace_sets, capsys) -> None:
    code = main(
        [
            "compare",
            str(trace_sets["baseline"]),
            str(trace_sets["baseline"]),
            "--group-by",
            "gen_ai.conversation.id",
            "--fail-on",
            "any",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert out.count("== shop, gen_ai.conversation.id=") == RUNS
    assert "sample too small to call a change (1 baseline, 1 candidate runs" in out


def test_the_two_process_a2a_demo_trace(tmp_path, capsys) -> None:
    out = tmp_path / "trace.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "ADK_OTEL_"))}
    done = subprocess.run(
        [sys.executable, "-m", "adk_otel.cli", "demo", "--remote", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    # One run a side cannot be judged: inconclusive (exit 3), never OK.
    assert main(["compare", str(out), str(out), "--fail-on", "any"]) == 3
    report = capsys.readouterr().out
    assert report.startswith("adk-otel compare: INCONCLUSIVE (too few runs to judge: errors needs")
    # One trace, two runs: the caller's and the remote service's, each its own app.
    assert "== payments-service (1 baseline vs 1 candidate runs)" in report
    assert "== shop (1 baseline vs 1 candidate runs)" in report
    assert "sample too small to call a change" in report
    assert "runs hitting " in report  # the demo's card payment fails on purpose


def _workflow_runs(route: str, folder: Path) -> Path:
    """RUNS real runs of a Workflow whose classifier takes ``route``, saved by a capture."""
    from google.adk.agents.context import Context
    from google.adk.workflow import Workflow

    from adk_otel.testing import TraceCapture

    def classify(ctx: Context) -> str:
        ctx.route = route
        return route

    def refund() -> str:
        return "refunded"

    def ship() -> str:
        return "shipped"

    capture = TraceCapture()
    for _ in range(RUNS):
        flow = Workflow(name="flow", edges=[("START", classify, {"refund": refund, "ship": ship})])
        asyncio.run(_run(capture.instrument(InMemoryRunner(node=flow, app_name="shop"))))
    folder.mkdir()
    return capture.save(folder / "traces.json")


def test_a_rerouted_workflow_is_a_path_change(tmp_path: Path) -> None:
    """Workflow nodes are steps of a run's path: a change that sends every run
    down another branch trips the path gate and says where the paths part."""
    baseline = _workflow_runs("refund", tmp_path / "base")
    candidate = _workflow_runs("ship", tmp_path / "cand")
    result = compare(baseline, candidate, fail_on=["path"])

    assert "path" in result.tripped_gates, result.report()
    (group,) = result.comparison.groups
    (divergence,) = group.divergences
    assert divergence.after == "node:classify"
    assert (divergence.baseline_step, divergence.candidate_step) == ("node:refund", "node:ship")
    assert compare(baseline, baseline, fail_on=["path"]).ok
