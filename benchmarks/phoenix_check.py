"""What Arize Phoenix shows for adk-otel's spans: a check against a real Phoenix.

Starts Phoenix (from its own virtualenv: it is large and no dependency of
adk-otel) on loopback, sends ``adk-otel demo`` to its OTLP/HTTP endpoint twice,
with content capture off and on, each run into its own Phoenix project (the
``openinference.project.name`` resource attribute), then reads the spans back
through Phoenix's REST API and the project token totals through its GraphQL
API, and checks:

* every layer has the kind users expect: invocation CHAIN, agent AGENT,
  model call LLM, tool TOOL (never UNKNOWN, never an extra LLM);
* the project's token total equals the sum over the model calls' usage;
* Phoenix knows the run's user (``user.id``): its trace and session show
  the demo's user id;
* with content capture on, every agent span carries its input messages, which
  Phoenix turns into its LLM message view (``llm.input_messages``), and the run's
  span its ``input.value`` / ``output.value`` (the trace list's Input and Output).

It prints one table per project and exits 1 if a check fails.

Phoenix's gRPC receiver always listens on every interface, so, run as root
where ``unshare`` exists, the script re-runs itself in a network namespace of
its own holding only a loopback interface: nothing it starts can reach or be
reached from outside. Phoenix's telemetry is switched off either way.

Usage::

    python3 -m venv .venv-phoenix && .venv-phoenix/bin/pip install arize-phoenix
    python benchmarks/phoenix_check.py --phoenix .venv-phoenix/bin/phoenix
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

EXPECTED = {"invocation": "CHAIN", "agent": "AGENT", "model": "LLM", "tool": "TOOL"}
DEMO_USER = "demo"  # the user_id adk-otel demo runs with
CAPTURE = {"content-off": "NO_CONTENT", "content-on": "SPAN_ONLY"}
STARTUP_SECONDS = 120.0
INGEST_SECONDS = 60.0


def phoenix_version(binary: str) -> str:
    python = Path(binary).parent / "python"
    code = "from importlib.metadata import version; print(version('arize-phoenix'))"
    found = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=False)
    return found.stdout.strip() or "(version unknown)"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def in_own_network_namespace(argv: list[str]) -> None:
    """Re-run this script under ``unshare --net`` (loopback only), if possible."""
    if os.environ.get("PHOENIX_CHECK_NETNS") or os.geteuid() != 0 or not shutil.which("unshare"):
        return
    env = {**os.environ, "PHOENIX_CHECK_NETNS": "1"}
    script = "ip link set lo up && exec " + " ".join(map(_quote, [sys.executable, *argv]))
    os.execvpe("unshare", ["unshare", "--net", "--", "sh", "-c", script], env)


def _quote(arg: str) -> str:
    return "'" + arg.replace("'", "'\\''") + "'"


def http(url: str, body: dict[str, Any] | None = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def start_phoenix(binary: str, workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {
        **os.environ,
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(free_port()),
        "PHOENIX_WORKING_DIR": str(workdir),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    log = (workdir / "phoenix.log").open("wb")
    process = subprocess.Popen([binary, "serve"], env=env, stdout=log, stderr=log)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"Phoenix exited at start; see {workdir / 'phoenix.log'}")
        try:
            urllib.request.urlopen(base + "/healthz", timeout=2).close()
            return process, base
        except (urllib.error.URLError, OSError):
            time.sleep(0.5)
    process.terminate()
    raise SystemExit(f"Phoenix did not answer within {STARTUP_SECONDS:.0f} s")


def send_demo(base: str, project: str, capture: str) -> None:
    env = {
        **os.environ,
        "OTEL_EXPORTER_OTLP_ENDPOINT": base,
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_RESOURCE_ATTRIBUTES": f"openinference.project.name={project}",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": capture,
    }
    code = "import sys; from adk_otel.cli import main; sys.exit(main(['demo']))"
    subprocess.run([sys.executable, "-c", code], env=env, check=False, capture_output=True)


def spans_of(base: str, project: str) -> list[dict[str, Any]]:
    url = f"{base}/v1/projects/{urllib.parse.quote(project)}/spans?limit=1000"
    return list(http(url)["data"])


def project_token_total(base: str, project: str) -> float:
    query = "{ projects { edges { node { name tokenCountTotal } } } }"
    edges = http(base + "/graphql", {"query": query})["data"]["projects"]["edges"]
    return float(next(e["node"]["tokenCountTotal"] for e in edges if e["node"]["name"] == project))


def project_users(base: str, project: str) -> tuple[set[Any], set[Any]]:
    """The user ids Phoenix shows for the project's sessions and traces."""
    query = (
        "{ projects { edges { node { name"
        " sessions(first: 100) { edges { node { userId } } }"
        " spans(first: 1000) { edges { node { trace { userId } } } } } } } }"
    )
    edges = http(base + "/graphql", {"query": query})["data"]["projects"]["edges"]
    node = next(e["node"] for e in edges if e["node"]["name"] == project)
    sessions = {e["node"]["userId"] for e in node["sessions"]["edges"]}
    traces = {e["node"]["trace"]["userId"] for e in node["spans"]["edges"]}
    return sessions, traces


def wait_for_spans(base: str, project: str) -> list[dict[str, Any]]:
    """The project's spans once their count stops growing (ingestion is async)."""
    deadline, seen = time.monotonic() + INGEST_SECONDS, -1
    while time.monotonic() < deadline:
        try:
            spans = spans_of(base, project)
        except urllib.error.HTTPError:  # the project does not exist yet
            spans = []
        if spans and len(spans) == seen:
            return spans
        seen = len(spans)
        time.sleep(1.0)
    raise SystemExit(f"{project}: no spans arrived within {INGEST_SECONDS:.0f} s")


def attribute(span: dict[str, Any], dotted: str) -> Any:
    """An attribute from the REST API's span, flat or nested by dots."""
    attributes = span.get("attributes") or {}
    if dotted in attributes:
        return attributes[dotted]
    node: Any = attributes
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def check(base: str, project: str, content: bool) -> list[str]:
    spans = wait_for_spans(base, project)
    failures: list[str] = []
    rows = []
    model_tokens = 0
    for span in sorted(spans, key=lambda s: s["start_time"]):
        layer = attribute(span, "adk.span.kind")
        if layer is None:
            continue  # not adk-otel's
        usage = (attribute(span, "gen_ai.usage.input_tokens") or 0) + (
            attribute(span, "gen_ai.usage.output_tokens") or 0
        )
        if layer == "model":
            model_tokens += usage
        total = attribute(span, "llm.token_count.total")
        captured = attribute(span, "gen_ai.input.messages") is not None
        viewed = attribute(span, "llm.input_messages.0.message.role") is not None
        rows.append((span["name"], layer, span["span_kind"], total, captured and viewed))
        if content and layer in ("invocation", "agent", "model") and not (captured and viewed):
            failures.append(f"{project}: {span['name']} shows no input messages")
        if content and layer == "invocation":
            # What Phoenix's trace list shows as the run's Input and Output.
            for key in ("input.value", "output.value"):
                if not attribute(span, key):
                    failures.append(f"{project}: {span['name']} has no {key}")
        if layer == "invocation" and attribute(span, "user.id") != DEMO_USER:
            failures.append(f"{project}: {span['name']} has no user.id {DEMO_USER!r}")
        if span["span_kind"] != EXPECTED[layer]:
            failures.append(
                f"{project}: {span['name']} is {span['span_kind']}, not {EXPECTED[layer]}"
            )
    phoenix_total = project_token_total(base, project)
    if phoenix_total != model_tokens:
        failures.append(f"{project}: Phoenix total {phoenix_total} != model calls {model_tokens}")
    session_users, trace_users = project_users(base, project)
    if session_users != {DEMO_USER} or trace_users != {DEMO_USER}:
        failures.append(f"{project}: Phoenix users: sessions {session_users}, traces {trace_users}")
    print(f"\n### Phoenix project `{project}`\n")
    print("| span | adk.span.kind | Phoenix span kind | llm.token_count.total | input messages |")
    print("|---|---|---|---|---|")
    for name, layer, kind, total, captured in rows:
        shown = "" if total is None else total
        print(f"| {name} | {layer} | {kind} | {shown} | {'yes' if captured else ''} |")
    kinds = Counter(row[2] for row in rows)
    print(
        f"\nkinds: {dict(sorted(kinds.items()))}; Phoenix project token total "
        f"{phoenix_total:g}; sum over model calls {model_tokens}; user of its sessions "
        f"{sorted(map(str, session_users))}, of its traces {sorted(map(str, trace_users))}"
    )
    return failures


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--phoenix", default="phoenix", help="the phoenix executable")
    args = parser.parse_args(argv)
    binary = shutil.which(args.phoenix)
    if binary is None:
        print(f"phoenix_check: {args.phoenix!r} not found; see --help", file=sys.stderr)
        return 2
    binary = os.path.abspath(binary)
    in_own_network_namespace([__file__, "--phoenix", binary])
    with tempfile.TemporaryDirectory(prefix="phoenix-check-") as tmp:
        process, base = start_phoenix(binary, Path(tmp))
        try:
            failures: list[str] = []
            for label, capture in CAPTURE.items():
                project = f"adk-otel-{label}"
                send_demo(base, project, capture)
                failures += check(base, project, capture != "NO_CONTENT")
        finally:
            process.terminate()
            process.wait(timeout=30)
    print(f"\nPhoenix {phoenix_version(binary)}; adk-otel demo sent over OTLP/HTTP")
    return verdict(failures)


def verdict(failures: list[str]) -> int:
    """Print where the check ran and its result; the exit code (1: a failure)."""
    network = "own network namespace" if os.environ.get("PHOENIX_CHECK_NETNS") else "host"
    print(f"\nnetwork: {network}; result: {'FAIL' if failures else 'OK'}")
    for failure in failures:
        print("  " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
