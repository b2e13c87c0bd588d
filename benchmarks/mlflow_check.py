"""What MLflow shows for adk-otel's spans: a check against a real MLflow server.

Starts ``mlflow server`` (from its own virtualenv: it is large and no
dependency of adk-otel) on loopback with a SQLite store, sends ``adk-otel
demo`` with content capture on to its OTLP/HTTP endpoint (``/v1/traces``,
experiment 0), reads the trace back with MLflow's client, and checks:

* one trace, state ERROR (the demo's declined payment);
* its user is the demo's ``user_id`` (MLflow reads ``user.id``), its session
  the ADK session (``gen_ai.conversation.id``);
* the invocation, every agent and every model call has inputs (MLflow reads
  ``gen_ai.input.messages``).

It prints one table and exits 1 if a check fails. Like ``phoenix_check.py``,
run as root where ``unshare`` exists it runs in a network namespace holding
only a loopback interface.

Usage::

    python3 -m venv .venv-mlflow && .venv-mlflow/bin/pip install mlflow
    python benchmarks/mlflow_check.py --mlflow .venv-mlflow/bin/mlflow
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from phoenix_check import DEMO_USER, free_port, in_own_network_namespace

STARTUP_SECONDS = 180.0
INGEST_SECONDS = 60.0
WITH_INPUTS = {"CHAIN", "AGENT", "LLM"}

# Run with the MLflow virtualenv's Python: prints the experiment's traces as JSON.
READ = """
import json, sys
from mlflow import MlflowClient
client = MlflowClient(tracking_uri=sys.argv[1])
print(json.dumps([
    {"state": str(t.info.state), "metadata": dict(t.info.trace_metadata),
     "spans": [{"name": s.name, "type": s.span_type, "inputs": s.inputs is not None,
                "outputs": s.outputs is not None} for s in t.data.spans]}
    for t in client.search_traces(locations=["0"], max_results=10)
]))
"""


def start_mlflow(binary: str, workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true"}
    command = [binary, "server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1"]
    command += ["--backend-store-uri", f"sqlite:///{workdir / 'mlflow.db'}"]
    command += ["--default-artifact-root", str(workdir / "artifacts")]
    log = (workdir / "mlflow.log").open("wb")
    # A session of its own: the server's job workers are stopped with it.
    process = subprocess.Popen(command, env=env, stdout=log, stderr=log, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"MLflow exited at start; see {workdir / 'mlflow.log'}")
        try:
            urllib.request.urlopen(base + "/health", timeout=2).close()
            return process, base
        except (urllib.error.URLError, OSError):
            time.sleep(0.5)
    stop(process)
    raise SystemExit(f"MLflow did not answer within {STARTUP_SECONDS:.0f} s")


def stop(process: subprocess.Popen[bytes]) -> None:
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def send_demo(base: str) -> None:
    env = {
        **os.environ,
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": base + "/v1/traces",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "x-mlflow-experiment-id=0",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY",
        "OTEL_SERVICE_NAME": "shop",
    }
    code = "import sys; from adk_otel.cli import main; sys.exit(main(['demo']))"
    subprocess.run([sys.executable, "-c", code], env=env, check=False, capture_output=True)


def read_traces(binary: str, base: str) -> list[dict[str, Any]]:
    python = str(Path(binary).parent / "python")
    deadline = time.monotonic() + INGEST_SECONDS
    while time.monotonic() < deadline:
        done = subprocess.run(
            [python, "-c", READ, base], capture_output=True, text=True, check=False, timeout=120
        )
        traces = json.loads(done.stdout or "[]") if done.returncode == 0 else []
        if traces and len(traces[0]["spans"]) >= 9:
            return list(traces)
        time.sleep(1.0)
    raise SystemExit(f"no complete trace within {INGEST_SECONDS:.0f} s")


def check(traces: list[dict[str, Any]]) -> list[str]:
    failures = []
    if len(traces) != 1:
        failures.append(f"{len(traces)} traces, expected 1")
    trace = traces[0]
    user = trace["metadata"].get("mlflow.trace.user")
    session = trace["metadata"].get("mlflow.trace.session")
    if not trace["state"].endswith("ERROR"):
        failures.append(f"trace state {trace['state']}, expected ERROR")
    if user != DEMO_USER:
        failures.append(f"trace user {user!r}, expected {DEMO_USER!r}")
    if not session:
        failures.append("no session")
    print("| span | MLflow span type | inputs | outputs |\n|---|---|---|---|")
    for span in trace["spans"]:
        print(
            f"| {span['name']} | {span['type']} | {'yes' if span['inputs'] else ''} "
            f"| {'yes' if span['outputs'] else ''} |"
        )
        if span["type"] in WITH_INPUTS and not span["inputs"]:
            failures.append(f"{span['name']} has no inputs")
    print(f"\ntrace state {trace['state']}; user {user!r}; session {'set' if session else None}")
    return failures


def mlflow_version(binary: str) -> str:
    python = Path(binary).parent / "python"
    code = "from importlib.metadata import version; print(version('mlflow'))"
    found = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=False)
    return found.stdout.strip() or "(version unknown)"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mlflow", default="mlflow", help="the mlflow executable")
    args = parser.parse_args(argv)
    binary = shutil.which(args.mlflow)
    if binary is None:
        print(f"mlflow_check: {args.mlflow!r} not found; see --help", file=sys.stderr)
        return 2
    binary = os.path.abspath(binary)
    in_own_network_namespace([__file__, "--mlflow", binary])
    with tempfile.TemporaryDirectory(prefix="mlflow-check-") as tmp:
        process, base = start_mlflow(binary, Path(tmp))
        try:
            send_demo(base)
            failures = check(read_traces(binary, base))
        finally:
            stop(process)
    network = "own network namespace" if os.environ.get("PHOENIX_CHECK_NETNS") else "host"
    print(f"\nMLflow {mlflow_version(binary)}; network: {network}")
    print(f"result: {'FAIL' if failures else 'OK'}")
    for failure in failures:
        print("  " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
