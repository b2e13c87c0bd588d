"""adk-otel without its ``grpc`` extra: no grpcio, no OTLP/gRPC exporter.

The test environment has both (the ``test`` extra), so each test runs a child
Python whose ``sitecustomize`` blocks the two import roots the way a missing
package fails (``ModuleNotFoundError``); children of that child (the demo's
remote service) inherit the block through ``PYTHONPATH``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from checkout import python_path

BLOCKED = ("grpc", "opentelemetry.exporter.otlp.proto.grpc")
SITECUSTOMIZE = f"""
import sys

class _NotInstalled:
    '''Imports of {BLOCKED} fail as if the packages were not installed.'''

    def find_spec(self, name, path=None, target=None):
        if any(name == root or name.startswith(root + ".") for root in {BLOCKED!r}):
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, _NotInstalled())
"""
TIMEOUT = 120.0


def run_without_grpc(
    tmp_path: Path, args: list[str], env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    blocker = tmp_path / "blocker"
    blocker.mkdir(exist_ok=True)
    (blocker / "sitecustomize.py").write_text(SITECUSTOMIZE)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "ADK_OTEL_"))}
    return subprocess.run(
        [sys.executable, "-W", "ignore", *args],
        env={**base, "PYTHONPATH": python_path(blocker), **(env or {})},
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=tmp_path,
    )


def test_the_blocker_blocks(tmp_path: Path) -> None:
    """The premise: in the child, grpc and the gRPC exporter cannot be imported."""
    code = "import importlib, sys\nfor name in sys.argv[1:]:\n" + textwrap.indent(
        "try:\n    importlib.import_module(name)\nexcept ModuleNotFoundError:\n"
        "    print('missing', name)\n",
        "    ",
    )
    names = ["grpc", "opentelemetry.exporter.otlp.proto.grpc.trace_exporter", "json"]
    result = run_without_grpc(tmp_path, ["-c", code, *names])
    assert result.stdout.split("\n")[:2] == [f"missing {names[0]}", f"missing {names[1]}"]
    assert "json" not in result.stdout


IMPORTS = """
import adk_otel, adk_otel.testing, adk_otel.testing.pytest_plugin, adk_otel.cli
from adk_otel import AdkOtelPlugin, instrument
from adk_otel.testing import OtlpReceiver, TraceCapture, ScriptedModel
with OtlpReceiver() as receiver:
    assert receiver.http_endpoint.startswith("http://127.0.0.1:")
    try:
        receiver.grpc_endpoint
    except RuntimeError as exc:
        print(exc)
"""


def test_the_package_and_its_test_helpers_import(tmp_path: Path) -> None:
    result = run_without_grpc(tmp_path, ["-c", IMPORTS])
    assert result.returncode == 0, result.stderr
    assert "pip install 'adk-otel[grpc]'" in result.stdout
    assert "http_endpoint" in result.stdout


PLUGIN_TEST = """
def test_fixtures(adk_trace, otlp_receiver):
    assert otlp_receiver.http_endpoint
    assert adk_trace.query() is not None
"""


def test_the_pytest_plugin_loads_and_its_fixtures_work(tmp_path: Path) -> None:
    (tmp_path / "test_user.py").write_text(PLUGIN_TEST)
    result = run_without_grpc(
        tmp_path, ["-m", "pytest", "-q", "-p", "no:cacheprovider", "test_user.py"]
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout


RUN = """
import asyncio, json, logging
from google.adk.agents import LlmAgent
from google.adk.runners import InMemoryRunner
from google.genai import types
import adk_otel
from adk_otel.testing import ScriptedModel, reply

warnings = []
class Keep(logging.Handler):
    def emit(self, record):
        if record.levelno >= logging.WARNING:
            warnings.append(f"{record.name}: {record.getMessage()}")
logging.getLogger().addHandler(Keep())

async def main():
    agent = LlmAgent(name="clerk", model=ScriptedModel(script=[reply("hi")]))
    runner = adk_otel.instrument(InMemoryRunner(agent=agent, app_name="shop"))
    session = await runner.session_service.create_session(app_name="shop", user_id="u")
    message = types.Content(role="user", parts=[types.Part(text="hello")])
    run = runner.run_async(user_id="u", session_id=session.id, new_message=message)
    return [event async for event in run]

events = asyncio.run(main())
print(json.dumps({"events": len(events), "warnings": warnings}))
"""


@pytest.mark.parametrize(
    ("variable", "events"),
    [
        ("OTEL_EXPORTER_OTLP_PROTOCOL", False),
        ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", False),
        # Content as events: adk-otel also builds a log pipeline, which must not warn again.
        ("OTEL_EXPORTER_OTLP_PROTOCOL", True),
    ],
    ids=["protocol", "traces-protocol", "protocol-with-log-events"],
)
def test_asking_for_grpc_is_one_warning_and_the_agent_runs(
    tmp_path: Path, variable: str, events: bool
) -> None:
    env = {variable: "grpc"}
    if events:
        env["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "EVENT_ONLY"
    result = run_without_grpc(tmp_path, ["-c", RUN], env)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["events"] == 1
    ours = [w for w in report["warnings"] if w.startswith("adk_otel")]
    assert len(ours) == 1, report["warnings"]
    assert f"{variable}=grpc" in ours[0]
    assert "pip install 'adk-otel[grpc]'" in ours[0]
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("remote", [False, True], ids=["demo", "demo-remote"])
def test_the_demo_runs(tmp_path: Path, remote: bool) -> None:
    args = ["-m", "adk_otel.cli", "demo", *(["--remote"] if remote else [])]
    result = run_without_grpc(tmp_path, args)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "invocation shop" in result.stdout
    if remote:
        assert "invocation payments-service" in result.stdout
