"""The pytest plugin, exercised in real pytest runs (pytester)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytest_plugins = ["pytester"]

SPANS = textwrap.dedent(
    """
    from opentelemetry.trace import Status, StatusCode


    def shop(provider, *, end_tool=True, tool="lookup"):
        tracer = provider.get_tracer("adk_otel")
        with tracer.start_as_current_span(
            "invocation shop", attributes={"adk.span.kind": "invocation", "adk.outcome": "ok"}
        ) as inv:
            inv.set_status(Status(StatusCode.OK))
            span = tracer.start_span(
                f"execute_tool {tool}",
                attributes={"adk.span.kind": "tool", "gen_ai.tool.name": tool},
            )
            if end_tool:
                span.set_attribute("adk.outcome", "ok")
                span.set_status(Status(StatusCode.OK))
                span.end()
    """
)


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(spans=SPANS)
    return pytester


def test_fixture_captures_and_asserts(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_ok="""
        from spans import shop

        def test_shop(adk_trace):
            shop(adk_trace.tracer_provider)
            adk_trace.query().tool("lookup").outcome("ok").one()
            adk_trace.assert_tree(("invocation shop", ["execute_tool lookup"]))

        def test_isolated(adk_trace):
            assert adk_trace.spans == []
        """
    )
    project.runpytest().assert_outcomes(passed=2)


def test_failed_tree_assertion_prints_the_tree(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_tree="""
        from spans import shop

        def test_shop(adk_trace):
            shop(adk_trace.tracer_provider)
            expected = ("execute_tool lookup", {"outcome": "error"})
            adk_trace.assert_tree(("invocation shop", [expected]))
        """
    )
    result = project.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*span tree does not match: under invocation shop: 'execute_tool lookup' does not "
            "match: outcome is 'ok', expected 'error'",
            "*expected:",
            "*└─ execute_tool lookup  {outcome: 'error'}",
            "*actual (2 spans):",
            "*invocation shop  OK ok *ms",
            "*└─ execute_tool lookup  OK ok *ms",
        ]
    )


def test_unended_span_fails_the_test_at_teardown(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_leak="""
        from spans import shop

        def test_leaks(adk_trace):
            shop(adk_trace.tracer_provider, end_tool=False)
        """
    )
    result = project.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_leaks*",
            "*adk_trace: 1 span(s) started and never ended: 'execute_tool lookup'",
            "*└─ execute_tool lookup  UNSET !! NOT ENDED",
        ]
    )


def test_snapshot_missing_update_match_and_mismatch(project: pytest.Pytester) -> None:
    test_file = """
        from spans import shop

        def test_snap(adk_trace):
            shop(adk_trace.tracer_provider, tool="{tool}")
            adk_trace.snapshot("shop")
        """
    project.makepyfile(test_snap=test_file.format(tool="lookup"))
    snapshot = project.path / "__snapshots__" / "test_snap" / "shop.txt"

    missing = project.runpytest()
    missing.assert_outcomes(failed=1)
    missing.stdout.fnmatch_lines(
        ["*snapshot 'shop' does not exist (shop.txt); run pytest with --adk-otel-update-snapshots*"]
    )
    assert not snapshot.exists()

    project.runpytest("--adk-otel-update-snapshots").assert_outcomes(passed=1)
    assert snapshot.read_text().splitlines() == [
        "invocation shop  INTERNAL OK ok",
        '│    adk.outcome = "ok"',
        '│    adk.span.kind = "invocation"',
        "└─ execute_tool lookup  INTERNAL OK ok",
        '        adk.outcome = "ok"',
        '        adk.span.kind = "tool"',
        '        gen_ai.tool.name = "lookup"',
    ]

    project.runpytest().assert_outcomes(passed=1)

    project.makepyfile(test_snap=test_file.format(tool="search"))
    changed = project.runpytest()
    changed.assert_outcomes(failed=1)
    changed.stdout.fnmatch_lines(
        [
            "*trace differs from snapshot 'shop'*",
            "*-└─ execute_tool lookup  INTERNAL OK ok",
            "*+└─ execute_tool search  INTERNAL OK ok",
        ]
    )
    project.runpytest("--adk-otel-update-snapshots").assert_outcomes(passed=1)
    assert "execute_tool search" in snapshot.read_text()


def test_update_option_is_in_help(project: pytest.Pytester) -> None:
    project.runpytest("--help").stdout.fnmatch_lines(["*--adk-otel-update-snapshots*"])


def test_plugin_module_imports_nothing_heavy() -> None:
    """pytest loads the plugin in every run: it must not pull in the capture, the
    SDK or ADK beyond what ``import adk_otel`` itself costs."""
    code = textwrap.dedent(
        """
        import sys
        import adk_otel
        before = set(sys.modules)
        import adk_otel.testing.pytest_plugin
        added = sorted(set(sys.modules) - before)
        print("\\n".join(added))
        """
    )
    added = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout.split()
    assert "adk_otel.testing.pytest_plugin" in added
    heavy = [m for m in added if m.startswith(("adk_otel.testing.", "opentelemetry", "google"))]
    assert heavy == ["adk_otel.testing.pytest_plugin"]


@pytest.mark.timeout(360)  # slow: 10-40 s on a loaded 2-core machine
def test_captures_stay_apart_under_xdist(project: pytest.Pytester) -> None:
    """Real ADK runs in parallel workers: each test sees its own trace only."""
    project.makepyfile(
        test_parallel="""
        import pytest
        from google.adk.agents import LlmAgent
        from google.adk.runners import InMemoryRunner
        from google.genai import types

        from adk_otel.testing import ScriptedModel, reply


        @pytest.mark.asyncio
        @pytest.mark.parametrize("number", range(8))
        async def test_own_trace_only(adk_trace, number):
            app = f"shop{number}"
            agent = LlmAgent(name=f"clerk{number}", model=ScriptedModel(script=[reply("ok")]))
            runner = adk_trace.instrument(InMemoryRunner(agent=agent, app_name=app))
            session = await runner.session_service.create_session(app_name=app, user_id="u")
            message = types.Content(role="user", parts=[types.Part(text="hi")])
            run = runner.run_async(user_id="u", session_id=session.id, new_message=message)
            async for _ in run:
                pass
            model = "generate_content scripted-model"
            adk_trace.assert_tree((f"invocation {app}", [(f"invoke_agent clerk{number}", [model])]))
            assert len({span.trace_id for span in adk_trace.spans}) == 1
        """
    )
    result = project.runpytest_subprocess("-n", "2", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=8)
    result.stdout.fnmatch_lines(["*2 workers*"])
