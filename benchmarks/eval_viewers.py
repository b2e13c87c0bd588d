"""What Arize Phoenix and MLflow show of adk-otel's evaluation results.

Runs the project's offline eval set (``tests/evaluation/evalkit.py``: a
scripted-model agent, four cases run concurrently, the two local metrics and
a rubric metric with a scripted judge) through ``TracedLocalEvalService``
with adk-otel's own pipeline exporting over OTLP/HTTP, twice per viewer:

* ``logs``: the default form, each result a ``gen_ai.evaluation.result`` log
  record in the invocation span's context, sent to the viewer's ``/v1/logs``;
* ``spans``: ``ADK_OTEL_EVALUATIONS_AS_SPANS=true``, one ``evaluate {case}``
  child span per judged invocation with the results as its span events.

Then it reads back what each viewer kept: whether it takes OTLP logs at all
(the HTTP status of an empty ``/v1/logs`` export), the ``evaluate`` spans and
their ``gen_ai.evaluation.*`` events, and whether the viewer made anything of
them (Phoenix's span annotations, MLflow's assessments). It prints one table
per viewer and exits 1 if the span form's results did not all arrive as span
events. ``--screenshots DIR`` also opens each viewer's page for a judged trace
in headless Chromium (Playwright, with ``--chromium``) and saves PNGs there.

Each viewer runs from a virtualenv of its own, as in ``phoenix_check.py`` and
``mlflow_check.py``, and, run as root where ``unshare`` exists, in a network
namespace holding only a loopback interface (the browser too).

Usage::

    python benchmarks/eval_viewers.py --phoenix .venv-phoenix/bin/phoenix \\
        --mlflow .venv-mlflow/bin/mlflow [--screenshots /tmp/shots]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any, NamedTuple

sys.path.insert(0, str(Path(__file__).parent))

from mlflow_check import mlflow_version, start_mlflow, stop
from phoenix_check import (
    http,
    in_own_network_namespace,
    phoenix_version,
    start_phoenix,
    verdict,
)

ROOT = Path(__file__).resolve().parents[1]
FORMS = {"logs": "false", "spans": "true"}
EVENT = "gen_ai.evaluation.result"
INGEST_SECONDS = 60.0
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


# ---------------------------------------------------------------- the eval run


async def _evaluate() -> list[dict[str, Any]]:
    sys.path.insert(0, str(ROOT / "tests"))
    from evaluation import evalkit as kit  # the tests' offline eval set and judge
    from google.adk.apps import App
    from google.adk.evaluation.base_eval_service import (
        EvaluateConfig,
        EvaluateRequest,
        InferenceConfig,
        InferenceRequest,
    )

    import adk_otel
    from adk_otel.evaluations import TracedLocalEvalService

    root = kit.agent()
    app = App(name=kit.APP, root_agent=root, plugins=[adk_otel.AdkOtelPlugin()])
    service = TracedLocalEvalService(root, kit.eval_set(kit.STANDARD), app=app)
    request = InferenceRequest(
        app_name=kit.APP, eval_set_id=kit.SET, inference_config=InferenceConfig(parallelism=4)
    )
    inferences = [r async for r in service.perform_inference(request)]
    metrics = [*kit.local_metrics(), kit.judged_metric()]
    scoring = EvaluateRequest(
        inference_results=inferences, evaluate_config=EvaluateConfig(eval_metrics=metrics)
    )
    return [
        {
            "case": result.eval_id,
            "metric": metric.metric_name,
            "score": metric.score,
            "status": metric.eval_status.name,
        }
        async for result in service.evaluate(scoring)
        for metric in result.overall_eval_metric_results
    ]


def send_eval() -> int:
    """The child: one eval run with adk-otel's pipeline from ``OTEL_*``; prints
    ADK's case results as JSON."""
    from opentelemetry import trace
    from opentelemetry._logs import get_logger_provider

    results = asyncio.run(_evaluate())
    for provider in (trace.get_tracer_provider(), get_logger_provider()):
        flush = getattr(provider, "force_flush", None)
        if flush is not None:
            flush()
    print(json.dumps(results))
    return 0


def run_eval(env: dict[str, str]) -> tuple[list[dict[str, Any]], list[str]]:
    """One eval run in a child process; ADK's case results and what the
    exporters complained of."""
    done = subprocess.run(
        [sys.executable, __file__, "send"],
        env={**os.environ, "PYTHONWARNINGS": "ignore", **env},
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    if done.returncode != 0:
        raise SystemExit(f"the eval run failed:\n{done.stderr[-3000:]}")
    complaints = sorted(
        {
            line.strip().split(" to http")[0]
            for line in done.stderr.splitlines()
            if "export" in line.lower()
        }
    )
    return json.loads(done.stdout.strip().splitlines()[-1]), complaints


def logs_status(url: str, headers: dict[str, str] | None = None) -> str:
    """What the viewer answers to an empty OTLP/HTTP logs export."""
    request = urllib.request.Request(
        url, data=b"", headers={"Content-Type": "application/x-protobuf", **(headers or {})}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            kind = response.headers.get("Content-Type", "")
            return f"{response.status} ({kind.split(';')[0] or 'no type'})"
    except urllib.error.HTTPError as error:
        return f"{error.code} {error.reason}"


def otlp_env(base: str, form: str, **extra: str) -> dict[str, str]:
    return {
        "OTEL_EXPORTER_OTLP_ENDPOINT": base,
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_SERVICE_NAME": "shop",
        "ADK_OTEL_EVALUATIONS_AS_SPANS": FORMS[form],
        **extra,
    }


# ---------------------------------------------------------------- Phoenix

PHOENIX_SPANS = """
{ projects { edges { node { id name
  spans(first: 1000) { edges { node { id name spanKind
    trace { traceId }
    events { name attributes }
    spanAnnotations { name score label }
    attributes } } } } } } }
"""


def phoenix_read(base: str, project: str) -> tuple[str, list[dict[str, Any]]]:
    """The project's id and spans, once their count stops growing."""
    deadline, seen = time.monotonic() + INGEST_SECONDS, -1
    while time.monotonic() < deadline:
        answer = http(base + "/graphql", {"query": PHOENIX_SPANS})
        for edge in answer["data"]["projects"]["edges"]:
            if edge["node"]["name"] == project:
                spans = [e["node"] for e in edge["node"]["spans"]["edges"]]
                if spans and len(spans) == seen:
                    return edge["node"]["id"], spans
                seen = len(spans)
        time.sleep(2.0)
    raise SystemExit(f"Phoenix {project}: no spans within {INGEST_SECONDS:.0f} s")


def phoenix_annotation_count(base: str) -> int:
    query = "{ projects { edges { node { spanAnnotationNames } } } }"
    try:
        edges = http(base + "/graphql", {"query": query})["data"]["projects"]["edges"]
    except (urllib.error.HTTPError, KeyError, TypeError):
        return -1
    return sum(len(e["node"]["spanAnnotationNames"] or []) for e in edges)


# ---------------------------------------------------------------- MLflow

MLFLOW_READ = """
import json, sys
from mlflow import MlflowClient
client = MlflowClient(tracking_uri=sys.argv[1])
print(json.dumps([
    {"trace_id": t.info.trace_id, "assessments": len(t.info.assessments or []),
     "spans": [{"name": s.name, "spanKind": s.span_type,
                "attributes": {k: v for k, v in s.attributes.items() if k.startswith("adk.")},
                "events": [{"name": e.name, "attributes": e.attributes} for e in s.events]}
               for s in t.data.spans]}
    for t in client.search_traces(locations=[sys.argv[2]], max_results=100)
]))
"""


def mlflow_warm_up(base: str) -> float:
    """Seconds MLflow takes for its first OTLP export (one span, experiment 0).
    Its first one is slow; the runs after it are timed against a warm server."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    exporter = OTLPSpanExporter(
        endpoint=base + "/v1/traces", headers={"x-mlflow-experiment-id": "0"}, timeout=60
    )
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    started = time.monotonic()
    provider.get_tracer("eval_viewers").start_span("warm-up").end()
    spent = time.monotonic() - started
    provider.shutdown()
    return spent


def mlflow_experiment(base: str, name: str) -> str:
    answer = http(base + "/api/2.0/mlflow/experiments/create", {"name": name})
    return str(answer["experiment_id"])


def mlflow_read(binary: str, base: str, experiment: str) -> list[dict[str, Any]]:
    """The experiment's traces, once their span count stops growing."""
    python = str(Path(binary).parent / "python")
    deadline, seen = time.monotonic() + INGEST_SECONDS, -1
    while time.monotonic() < deadline:
        done = subprocess.run(
            [python, "-c", MLFLOW_READ, base, experiment],
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        traces = json.loads(done.stdout or "[]") if done.returncode == 0 else []
        count = sum(len(t["spans"]) for t in traces)
        if count and count == seen:
            return list(traces)
        seen = count
        time.sleep(2.0)
    raise SystemExit(f"MLflow experiment {experiment}: no spans within {INGEST_SECONDS:.0f} s")


# ---------------------------------------------------------------- reading


def tally(spans: list[dict[str, Any]]) -> dict[str, Any]:
    """What a viewer kept of one run: its spans by layer, the ``evaluate``
    spans and their evaluation events."""
    names = Counter(span["name"].split(" ")[0] for span in spans)
    events = [
        event for span in spans for event in span.get("events") or [] if event["name"] == EVENT
    ]
    labelled = [
        e
        for e in events
        if "gen_ai.evaluation.name" in _flat(e["attributes"])
        and "gen_ai.evaluation.score.value" in _flat(e["attributes"])
    ]
    kinds = {str(s.get("spanKind")) for s in spans if s["name"].startswith("evaluate ")}
    return {
        "spans": dict(sorted(names.items())),
        "events": len(events),
        "scored": len(labelled),
        "evaluate": ", ".join(sorted(kinds)) or "-",
    }


def _flat(attributes: Any, prefix: str = "") -> dict[str, Any]:
    """Attributes as dotted keys, whether the viewer nests them or not."""
    if isinstance(attributes, str):
        try:
            attributes = json.loads(attributes)
        except ValueError:
            return {}
    flat: dict[str, Any] = {}
    for key, value in (attributes or {}).items():
        if isinstance(value, dict):
            flat.update(_flat(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def expected_events(results: list[dict[str, Any]]) -> int:
    """Results per invocation plus per case: 3 metrics x (5 invocations + 4 cases)."""
    cases = {r["case"] for r in results}
    metrics = {r["metric"] for r in results}
    return len(metrics) * (5 + len(cases))


# ---------------------------------------------------------------- screenshots


class Shot(NamedTuple):
    """One screenshot: the page, the texts to click in turn, and a text to
    wait for once loaded (a viewer renders after its requests settle)."""

    name: str
    url: str
    clicks: list[str]
    shows: str


def settle(page: Any) -> None:
    """Wait for the page's requests to stop (MLflow's pages keep polling)."""
    with contextlib.suppress(Exception):
        page.wait_for_load_state("networkidle", timeout=10_000)
    time.sleep(2.0)


def click(page: Any, text: str) -> None:
    """Click a tab whose name starts with ``text`` (Phoenix's carry a count,
    ``Events 6``), else the first element showing exactly ``text``
    (``text#N``: the Nth, once it shows); ``scroll:text`` scrolls the last
    element showing ``text`` into view instead."""
    if text.startswith("scroll:"):
        page.get_by_text(text.removeprefix("scroll:"), exact=True).last.scroll_into_view_if_needed()
        time.sleep(1.0)
        return
    text, _, nth = text.partition("#")
    if nth:
        target = page.get_by_text(text, exact=True).nth(int(nth) - 1)
    else:
        tab = page.get_by_role("tab", name=re.compile("^" + re.escape(text)))
        target = tab.or_(page.get_by_text(text, exact=True)).first
    target.click(timeout=20_000)
    settle(page)


def screenshots(
    pages: list[Shot],
    folder: Path,
    chromium: str,
    dismiss: tuple[str, ...] = (),
) -> list[str]:
    """Each page as ``{name}.png`` in ``folder``; first the buttons named
    ``dismiss`` (a viewer's tips and side panels), where they show."""
    from playwright.sync_api import sync_playwright

    folder.mkdir(parents=True, exist_ok=True)
    saved = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_FLAGS)
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        for name, url, clicks, shows in pages:
            page.goto(url)
            settle(page)
            with contextlib.suppress(Exception):
                page.get_by_text(shows).first.wait_for(timeout=15_000)
            for button in dismiss:
                found = page.get_by_role("button", name=button, exact=True)
                if found.count() and found.first.is_visible():
                    found.first.click()
                    time.sleep(1.0)
            for text in clicks:
                try:
                    click(page, text)
                except Exception as error:
                    print(f"  {name}: could not click {text!r}: {type(error).__name__}")
            if clicks:  # the panel's content, once loaded (if there is any)
                with contextlib.suppress(Exception):
                    page.get_by_text(EVENT).first.wait_for(timeout=15_000)
            time.sleep(1.0)
            path = folder / f"{name}.png"
            page.screenshot(path=str(path), full_page=False)
            saved.append(str(path))
        browser.close()
    return saved


# ---------------------------------------------------------------- the checks


def check_phoenix(binary: str, shots: Path | None, chromium: str) -> list[str]:
    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="eval-viewers-phoenix-") as tmp:
        process, base = start_phoenix(binary, Path(tmp))
        try:
            print(f"\n### Arize Phoenix {phoenix_version(binary)}\n")
            print(f"POST /v1/logs (empty export): {logs_status(base + '/v1/logs')}")
            rows, pages = [], []
            for form in FORMS:
                project = f"adk-otel-eval-{form}"
                attrs = f"openinference.project.name={project}"
                results, complaints = run_eval(otlp_env(base, form, OTEL_RESOURCE_ATTRIBUTES=attrs))
                project_id, spans = phoenix_read(base, project)
                kept = tally(spans)
                annotations = sum(len(s["spanAnnotations"]) for s in spans)
                rows.append((form, kept, annotations, complaints))
                if form == "spans" and kept["scored"] != expected_events(results):
                    failures.append(
                        f"Phoenix: {kept['scored']} scored span events, "
                        f"expected {expected_events(results)}"
                    )
                pages += phoenix_pages(base, project_id, spans, form)
            print_rows(rows)
            print(f"span annotation names in any project: {phoenix_annotation_count(base)}")
            if shots is not None:
                for path in screenshots(pages, shots, chromium):
                    print(f"  screenshot {path}")
        finally:
            process.terminate()
            process.wait(timeout=30)
    return failures


def phoenix_pages(base: str, project_id: str, spans: list[dict[str, Any]], form: str) -> list[Shot]:
    """The judged trace of the case ``expects-in-stock``: its invocation span
    (and, in the span form, its ``evaluate`` span), Attributes and Events tabs."""
    case = "expects-in-stock"
    root = next(
        s
        for s in spans
        if s["name"].startswith("invocation ")
        and _flat(s["attributes"]).get("adk.eval.case.id") == case
    )
    trace_id = root["trace"]["traceId"]
    trace_url = f"{base}/projects/{project_id}/traces/{trace_id}"
    root_url = f"{trace_url}?selectedSpanNodeId={root['id']}"
    pages = [
        Shot(f"phoenix-{form}-traces", f"{base}/projects/{project_id}", [], "EvaluationGenerator"),
        Shot(f"phoenix-{form}-invocation", root_url, [], "adk.eval.case.id"),
        Shot(f"phoenix-{form}-invocation-events", root_url, ["Events"], "adk.eval.case.id"),
    ]
    evaluate = [s for s in spans if s["name"] == f"evaluate {case}"]
    if evaluate:
        url = f"{trace_url}?selectedSpanNodeId={evaluate[0]['id']}"
        pages += [
            Shot(f"phoenix-{form}-evaluate-attributes", url, ["Attributes"], "adk.eval.set.id"),
            Shot(f"phoenix-{form}-evaluate-events", url, ["Events"], "adk.eval.set.id"),
            Shot(
                f"phoenix-{form}-evaluate-event", url, ["Events", f"{EVENT}#2"], "adk.eval.set.id"
            ),
            Shot(
                f"phoenix-{form}-evaluate-rubric", url, ["Events", f"{EVENT}#3"], "adk.eval.set.id"
            ),
        ]
    return pages


def check_mlflow(binary: str, shots: Path | None, chromium: str) -> list[str]:
    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="eval-viewers-mlflow-") as tmp:
        process, base = start_mlflow(binary, Path(tmp))
        try:
            print(f"\n### MLflow {mlflow_version(binary)}\n")
            print(f"POST /v1/logs (empty export): {logs_status(base + '/v1/logs')}")
            print(f"first OTLP trace export (warm-up): {mlflow_warm_up(base):.1f} s")
            rows, pages = [], []
            for form in FORMS:
                experiment = mlflow_experiment(base, f"adk-otel-eval-{form}")
                header = f"x-mlflow-experiment-id={experiment}"
                results, complaints = run_eval(
                    otlp_env(base, form, OTEL_EXPORTER_OTLP_HEADERS=header)
                )
                traces = mlflow_read(binary, base, experiment)
                spans = [s for t in traces for s in t["spans"]]
                kept = tally(spans)
                assessments = sum(t["assessments"] for t in traces)
                rows.append((form, kept, assessments, complaints))
                if form == "spans" and kept["scored"] != expected_events(results):
                    failures.append(
                        f"MLflow: {kept['scored']} scored span events, "
                        f"expected {expected_events(results)}"
                    )
                pages += mlflow_pages(base, experiment, traces, form)
            print_rows(rows)
            if shots is not None:
                # MLflow's first visit: a tip over the trace list, and its assistant's panel.
                for path in screenshots(pages, shots, chromium, dismiss=("Got it", "Close")):
                    print(f"  screenshot {path}")
        finally:
            stop(process)
    return failures


def mlflow_pages(base: str, experiment: str, traces: list[dict[str, Any]], form: str) -> list[Shot]:
    case = "expects-in-stock"
    judged = next(
        t
        for t in traces
        if any(s["attributes"].get("adk.eval.case.id") == case for s in t["spans"])
    )
    url = f"{base}/#/experiments/{experiment}/traces?selectedEvaluationId={judged['trace_id']}"
    pages = [
        Shot(f"mlflow-{form}-traces", f"{base}/#/experiments/{experiment}/traces", [], "adk-eval"),
        Shot(f"mlflow-{form}-trace", url, [], "adk.eval.case.id"),
    ]
    if form == "spans":
        pages += [
            Shot(f"mlflow-{form}-evaluate", url, [f"evaluate {case}"], "adk.eval.case.id"),
            Shot(f"mlflow-{form}-evaluate-events", url, [f"evaluate {case}", "Events"], "adk.eval"),
            Shot(
                f"mlflow-{form}-evaluate-events-case",
                url,
                [f"evaluate {case}", "Events", "scroll:case"],
                "adk.eval",
            ),
        ]
    return pages


def print_rows(rows: list[tuple[str, dict[str, Any], int, list[str]]]) -> None:
    print(
        "\n| form | spans kept | `evaluate` span shown as "
        "| gen_ai.evaluation.result span events (scored) "
        "| annotations / assessments | exporter said |"
    )
    print("|---|---|---|---|---|---|")
    for form, kept, made, complaints in rows:
        said = "; ".join(c[:120] for c in complaints) or "nothing"
        spans = ", ".join(f"{k} {v}" for k, v in kept["spans"].items())
        print(
            f"| {form} | {spans} | {kept['evaluate']} | {kept['events']} ({kept['scored']}) "
            f"| {made} | {said} |"
        )


def main(argv: list[str]) -> int:
    if argv[:1] == ["send"]:
        return send_eval()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--phoenix", help="the phoenix executable (its own virtualenv)")
    parser.add_argument("--mlflow", help="the mlflow executable (its own virtualenv)")
    parser.add_argument("--screenshots", type=Path, help="save each viewer's pages here")
    parser.add_argument(
        "--chromium",
        default=os.environ.get("ADK_OTEL_CHROMIUM") or shutil.which("chromium") or "chromium",
        help="the Chromium executable for --screenshots (default: ADK_OTEL_CHROMIUM, else PATH)",
    )
    args = parser.parse_args(argv)
    binaries = {}
    for name in ("phoenix", "mlflow"):
        given = getattr(args, name)
        if given is None:
            continue
        found = shutil.which(given)
        if found is None:
            print(f"eval_viewers: {given!r} not found; see --help", file=sys.stderr)
            return 2
        binaries[name] = os.path.abspath(found)
    if not binaries:
        parser.error("name --phoenix, --mlflow or both")
    again = [os.path.abspath(__file__)]
    for name, binary in binaries.items():
        again += [f"--{name}", binary]
    if args.screenshots is not None:
        again += ["--screenshots", str(args.screenshots.resolve()), "--chromium", args.chromium]
    in_own_network_namespace(again)
    failures: list[str] = []
    if "phoenix" in binaries:
        failures += check_phoenix(binaries["phoenix"], args.screenshots, args.chromium)
    if "mlflow" in binaries:
        failures += check_mlflow(binaries["mlflow"], args.screenshots, args.chromium)
    return verdict(failures)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
