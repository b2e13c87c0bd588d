"""Spans that others start during a run (a traced session, artifact or memory
service, a workflow node's own client call) land in adk-otel's run where ADK
alone keeps them in its run: under the nearest adk-otel span of their layer,
on both paths (``instrument(runner)`` and the plugin in the App), each
compared with ADK alone on the same set-up. ADK's ``AutoTracingPlugin``
rewrites the modules of the process it runs in, so it runs in a child
process (foreign_child.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan

from . import foreign
from .harness import DISPATCH, Recorder, assert_clean

INV = f"invocation {foreign.APP}"
BEFORE_ANY_HOOK = {"workflow": Counter({"SELECT session": 1})}
"""Foreign spans ADK alone keeps in its run that adk-otel cannot: a workflow
root's run reads its session inside ADK's run span but before the first
plugin hook, so before the invocation span exists."""


async def _run(setup: foreign.SetUp, path: str) -> tuple[Recorder, foreign.Landing]:
    """One run of ``setup`` traced the ``path`` way, recorded on its own."""
    recorder, before = Recorder(), DISPATCH.target
    DISPATCH.target = recorder
    try:
        await foreign._run_once(foreign.runner(setup, path))
    finally:
        DISPATCH.target = before
    return recorder, foreign.landing(recorder.ended, setup.foreign_scopes)


def _parent(recorder: Recorder, span: ReadableSpan) -> str:
    found = recorder.parent_of(span)
    return found.name if found is not None else "-"


def _child(*setups: str) -> dict[str, Any]:
    """The set-ups run in a child process (foreign_child.py): ADK alone, then
    both of adk-otel's paths, on a global SDK provider."""
    done = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("foreign_child.py")), *setups],
        capture_output=True,
        text=True,
        timeout=220,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        cwd=Path(__file__).parents[2],
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


@pytest.fixture(scope="module")
def services() -> dict[str, Any]:
    return _child(*SERVICES)


SERVICES = ("session", "artifact", "memory", "workflow")


@pytest.mark.timeout(240)
@pytest.mark.parametrize("path", ["runner", "app"])
@pytest.mark.parametrize("name", SERVICES)
def test_foreign_spans_are_in_the_run_as_under_adk_alone(services, name, path):
    alone, traced = services[name]["adk"], services[name][path]

    assert alone["root"] != INV and traced["root"] == INV
    assert alone["foreign"] == traced["foreign"] > 0
    expected = Counter(alone["under_root"]) - BEFORE_ANY_HOOK.get(name, Counter())
    assert Counter(traced["under_root"]) == expected, services[name]
    gap = sum(BEFORE_ANY_HOOK.get(name, Counter()).values())
    assert traced["traces"] <= alone["traces"] + gap, services[name]
    assert traced["clean"], services[name]


@pytest.mark.timeout(120)  # four set-ups run, ADK importing its tools' modules at first use
@pytest.mark.parametrize("path", ["runner", "app"])
async def test_foreign_spans_sit_under_the_span_of_their_layer(path, recorder, caplog):
    """The runner's own writes under the invocation, a tool's under its tool
    span, an agent's memory search under the agent, a node's call under its node."""
    parents: dict[str, set[str]] = {}
    for name in ("session", "artifact", "memory", "workflow"):
        traced, _ = await _run(foreign.SETUPS[name], path)
        for span in traced.ended:
            if span.instrumentation_scope.name == foreign.STORE_SCOPE:
                parents.setdefault(span.name, set()).add(_parent(traced, span))

    assert parents == {
        # The session read before ADK's run span (an agent root's) is outside
        # under ADK alone too; a workflow root's (see BEFORE_ANY_HOOK) as well.
        "SELECT session": {"-"},
        "INSERT event": {INV},
        "PUT artifact": {"execute_tool keep_note"},
        "GET artifact": {"execute_tool keep_note"},
        "SEARCH memory": {"invoke_agent clerk"},
        "GET stock": {"invoke_node _prepare"},
    }
    assert_clean(recorder, caplog.records)


@pytest.mark.timeout(240)
def test_adk_auto_tracing_plugin_spans_are_in_the_run():
    """ADK's own ``AutoTracingPlugin`` on the App, beside adk-otel on
    both paths, against ADK alone."""
    counts = _child("auto_tracing")
    if "absent" in counts:
        pytest.fail(f"google-adk {counts['absent']} has no AutoTracingPlugin")
    alone = counts["auto_tracing"]["adk"]
    outside_alone = alone["foreign"] - alone["in_run"]
    assert alone["in_run"] > 20, counts
    for path in ("runner", "app"):
        # How many spans the plugin makes depends on what ADK calls (ADK's own
        # telemetry is switched off under adk-otel): compared, the ones outside.
        traced = counts["auto_tracing"][path]
        assert traced["in_run"] > 20, counts
        # ADK builds the run's InvocationContext (a wrapped call) before the
        # first plugin hook: that one span stays outside.
        assert traced["foreign"] - traced["in_run"] <= outside_alone + 1, counts
        assert traced["traces"] <= alone["traces"] + 1, counts
        assert traced["clean"], counts
