"""``adk-otel demo --remote``: the two-process demo works offline, with no
collector, and shows one trace across both processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from adk_otel.cli.main import main
from adk_otel.traces.io.files import read_spans


def test_the_remote_demo_prints_and_writes_one_trace(tmp_path: Path, capsys) -> None:
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
    assert "one trace across two processes" in done.stdout
    assert "invocation payments-service" in done.stdout
    spans = read_spans(out)
    assert len({s.trace_id for s in spans}) == 1
    assert [s.name for s in spans if s.parent_id is None] == ["invocation shop"]
    services = {s.resource.get("service.name") for s in spans}
    assert services == {"adk-otel-demo", "payments-service"}
    (charge,) = [s for s in spans if s.name == "execute_tool charge_card"]
    assert charge.status_code == "ERROR"
    # The same charge as the local demo's: the mug's 19.9 EUR, declined.
    assert charge.status_description == "PaymentDeclined: card declined for 19.9 EUR"
    (client,) = [s for s in spans if s.kind == "CLIENT" and s.name == "invoke_agent payments"]
    assert client.status_code == "ERROR" and client.attributes["a2a.task.state"] == "failed"
    # The remote service's trace search shows the whole trace, from the caller's root.
    assert main(["tree", str(out), "--service", "payments-service", "--format", "json"]) == 0
    (trace,) = json.loads(capsys.readouterr().out)["traces"]
    assert len(trace["spans"]) == len(spans)
    assert [s["name"] for s in trace["spans"] if s["depth"] == 0] == ["invocation shop"]


def test_without_the_a2a_sdk_the_remote_demo_says_what_to_install() -> None:
    # A None entry in sys.modules makes the import fail, as an absent package does.
    code = (
        "import sys; sys.modules['a2a'] = None; sys.modules['a2a.client'] = None\n"
        "from adk_otel.cli import main; sys.exit(main(['demo', '--remote']))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "pip install 'adk-otel[a2a]'" in done.stdout
    assert "Traceback" not in done.stderr
