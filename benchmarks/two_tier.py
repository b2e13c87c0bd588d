"""The two-tier collector set-up run on real collectors: whole traces, sampling, loss, throughput.

Starts three collector processes on loopback from the shipped configs
(collector-config/otel-agent.yaml and two of otel-gateway.yaml), with the
backends swapped for files in a scratch folder: Jaeger and Tempo become
``file/sampled`` (what tail sampling kept), the ClickHouse pipeline is left
out; the unsampled ``file`` output stays as shipped. The agent's static
resolver names the two gateways' loopback ports. Then, each stage with fresh
collectors:

1. ``routing``: emitting processes run real adk-otel instrumented ADK agents
   (a tool workload on the scripted model; one run in ten fails in its tool) and
   export over the SDK's OTLP gRPC exporter to the agent. Counted from the
   gateways' files: every trace whole on exactly one gateway; under tail
   sampling (``TRACE_SAMPLE_PERCENT``, 25 here) every failing trace kept whole
   and every other trace kept whole or not at all, at about that share.
2. ``restart``: emitting processes replay those traces' spans (new trace ids,
   each trace's spans split over two requests) at a steady rate; one gateway is
   killed (SIGKILL) and started again mid-stream. Run once with the load-balancing
   exporter's defaults (no queue of its own, an in-memory queue per gateway) and
   once as shipped (its own persistent queue, ``file_storage``). Loss is counted
   from the files and from the collectors' own metrics (accepted, refused, sent,
   failed).
3. ``throughput``: the replay at rising rates until the set-up refuses or falls
   behind; spans per second taken, with the memory limiter's settings and each
   collector's heap and RSS.

Bounded: every stage has a deadline and the collectors are stopped at its end.
Needs a collector built with the components of collector-config/builder-config.yaml
(docs/collector.md says how). Usage:
``python benchmarks/two_tier.py --collector PATH [--stages routing,restart,throughput]``
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import logging
import multiprocessing
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter, defaultdict
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
CONFIG_DIR = HERE.parent / "collector-config"
GATEWAYS = ("gateway-1", "gateway-2")
SAMPLE_PERCENT = 25
ERROR_SHARE = 0.1
RESTARTS = (
    ("default", signal.SIGKILL),
    ("persistent", signal.SIGKILL),
    ("persistent", signal.SIGTERM),
)


# -- the collectors ------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class Collector:
    """One collector process: its derived config, ports, log and metrics."""

    name: str
    binary: str
    config: dict[str, Any]
    workdir: Path
    env: dict[str, str] = field(default_factory=dict)
    health_port: int = field(default_factory=free_port)
    metrics_port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    lives: list[dict[str, float]] = field(default_factory=list)
    """The last metrics read in each earlier life of the process (before a kill)."""
    last: dict[str, float] = field(default_factory=dict)

    def start(self) -> None:
        config = copy.deepcopy(self.config)
        config["extensions"]["health_check"]["endpoint"] = f"127.0.0.1:{self.health_port}"
        config["service"]["telemetry"] = {
            "metrics": {
                "level": "detailed",
                "readers": [
                    {
                        "pull": {
                            "exporter": {
                                "prometheus": {"host": "127.0.0.1", "port": self.metrics_port}
                            }
                        }
                    }
                ],
            }
        }
        path = self.workdir / f"{self.name}.yaml"
        path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
        log = (self.workdir / f"{self.name}.log").open("ab")
        self.process = subprocess.Popen(
            [self.binary, f"--config=file:{path}"],
            stdout=log,
            stderr=log,
            env={**os.environ, **self.env},
        )
        deadline = time.monotonic() + 60
        while not self.healthy():
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited; see {self.workdir / self.name}.log")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} not healthy within 60 s")
            time.sleep(0.1)

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}/", timeout=1) as r:
                return bool(r.status == 200)
        except OSError:
            return False

    def kill(self, how: signal.Signals = signal.SIGKILL) -> None:
        """SIGKILL: what the process held in memory is gone; SIGTERM: it shuts down."""
        self.scrape()
        assert self.process is not None
        self.process.send_signal(how)
        self.process.wait(timeout=60)
        self.lives.append(self.last)
        self.last = {}

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.scrape()
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)

    def scrape(self) -> dict[str, float]:
        """The collector's own metrics, summed per name over their labels."""
        try:
            url = f"http://127.0.0.1:{self.metrics_port}/metrics"
            with urllib.request.urlopen(url, timeout=2) as response:
                text = response.read().decode()
        except OSError:
            return self.last
        totals: dict[str, float] = defaultdict(float)
        for line in text.splitlines():
            if line.startswith("#") or not line.startswith("otelcol_"):
                continue
            name_labels, _, value = line.rpartition(" ")
            name = re.sub(r"\{.*\}", "", name_labels).removesuffix("_total")
            totals[name] += float(value)
        self.last = dict(totals)
        return self.last

    def total(self, name: str) -> float:
        """``name`` summed over every life of the process."""
        return sum(life.get(name, 0.0) for life in [*self.lives, self.last])

    def memory_limiter_line(self) -> str:
        log = (self.workdir / f"{self.name}.log").read_text(errors="replace")
        lines = [line for line in log.splitlines() if "Memory limiter configured" in line]
        return lines[-1].split("\t")[-1] if lines else "(not logged)"


def gateway_config(name: str, port: int, workdir: Path) -> dict[str, Any]:
    """otel-gateway.yaml with the backends swapped for files."""
    config = yaml.safe_load((CONFIG_DIR / "otel-gateway.yaml").read_text(encoding="utf-8"))
    config["receivers"]["otlp"]["protocols"] = {"grpc": {"endpoint": f"127.0.0.1:{port}"}}
    exporters = config["exporters"]
    for backend in ("otlp_grpc/jaeger", "otlp_grpc/tempo", "clickhouse", "debug"):
        del exporters[backend]
    exporters["file"]["path"] = str(workdir / f"traces-{name}.json")
    exporters["file/logs"]["path"] = str(workdir / f"logs-{name}.json")
    exporters["file/sampled"] = {
        "path": str(workdir / f"sampled-{name}.json"),
        "format": "json",
        "append": True,  # as the shipped file exporters: a restart keeps what was written
    }
    pipelines = config["service"]["pipelines"]
    del pipelines["traces/clickhouse"]
    pipelines["traces"]["exporters"] = ["file/sampled"]
    pipelines["logs"]["exporters"] = ["file/logs"]
    return dict(config)


def agent_config(gateway_ports: list[int], port: int, workdir: Path, queue: str) -> dict[str, Any]:
    """otel-agent.yaml on loopback; ``queue``: ``persistent`` (as shipped) or ``default``
    (the load-balancing exporter's own defaults: no queue of its own, one in memory per
    gateway)."""
    config = yaml.safe_load((CONFIG_DIR / "otel-agent.yaml").read_text(encoding="utf-8"))
    config["receivers"]["otlp"]["protocols"]["grpc"]["endpoint"] = f"127.0.0.1:{port}"
    config["receivers"]["otlp"]["protocols"]["http"]["endpoint"] = f"127.0.0.1:{free_port()}"
    config["extensions"]["file_storage"]["directory"] = str(workdir / "queue")
    exporter = config["exporters"]["load_balancing"]
    exporter["resolver"]["static"]["hostnames"] = [f"127.0.0.1:{p}" for p in gateway_ports]
    if queue == "default":
        for key in ("sending_queue", "retry_on_failure"):
            del exporter[key]
            del exporter["protocol"]["otlp"][key]
        config["extensions"].pop("file_storage")
        config["service"]["extensions"].remove("file_storage")
    return dict(config)


@dataclass
class SetUp:
    agent: Collector
    gateways: list[Collector]
    endpoint: str
    workdir: Path

    @property
    def collectors(self) -> list[Collector]:
        return [self.agent, *self.gateways]

    def stop(self) -> None:
        for collector in reversed(self.collectors):
            collector.stop()


def start_set_up(
    binary: str, workdir: Path, *, queue: str, sample_percent: int, memory_limit_mib: int | None
) -> SetUp:
    """The agent and the gateways; ``memory_limit_mib`` replaces the memory limiter's share
    of the machine's memory with a fixed limit (a quarter of it the spike allowance)."""
    workdir.mkdir(parents=True, exist_ok=True)
    ports = [free_port() for _ in GATEWAYS]
    gateways = [
        Collector(
            name,
            binary,
            gateway_config(name, port, workdir),
            workdir,
            env={"GATEWAY_NAME": name, "TRACE_SAMPLE_PERCENT": str(sample_percent)},
        )
        for name, port in zip(GATEWAYS, ports, strict=True)
    ]
    agent_port = free_port()
    agent = Collector("agent", binary, agent_config(ports, agent_port, workdir, queue), workdir)
    if memory_limit_mib is not None:
        for collector in [agent, *gateways]:
            collector.config["processors"]["memory_limiter"] = {
                "check_interval": "1s",
                "limit_mib": memory_limit_mib,
                "spike_limit_mib": memory_limit_mib // 4,
            }
    set_up = SetUp(agent, gateways, f"127.0.0.1:{agent_port}", workdir)
    try:
        for collector in [*gateways, agent]:
            collector.start()
    except BaseException:
        set_up.stop()
        raise
    return set_up


# -- what the gateways wrote ---------------------------------------------------


def read_spans(path: Path) -> Iterator[tuple[str, str, int]]:
    """(trace id, span id, status code) of every span in a file exporter's JSON lines."""
    if not path.exists():
        return
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if not line.strip():
                continue
            try:
                request = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut by SIGKILL
            for resource in request.get("resourceSpans", []):
                for scope in resource.get("scopeSpans", []):
                    for span in scope.get("spans", []):
                        code = span.get("status", {}).get("code", 0)
                        yield span["traceId"], span["spanId"], int(code)


def landed(workdir: Path, prefix: str) -> dict[str, dict[str, Counter[str]]]:
    """trace id -> gateway -> span id -> times written."""
    traces: dict[str, dict[str, Counter[str]]] = defaultdict(lambda: defaultdict(Counter))
    for gateway in GATEWAYS:
        for trace_id, span_id, _ in read_spans(workdir / f"{prefix}-{gateway}.json"):
            traces[trace_id][gateway][span_id] += 1
    return traces


def wait_until_settled(set_up: SetUp, *, quiet: float, limit: float) -> None:
    """Until the gateways' files stop growing for ``quiet`` seconds (bounded by ``limit``)."""
    deadline = time.monotonic() + limit
    sizes: tuple[int, ...] = ()
    since = time.monotonic()
    while time.monotonic() < deadline:
        files = sorted(set_up.workdir.glob("*.json"))
        now = tuple(path.stat().st_size for path in files)
        if now != sizes:
            sizes, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return
        time.sleep(0.5)


@dataclass
class Sent:
    """What the emitters sent: trace id -> (spans, failed), and the agent's refusals."""

    traces: dict[str, tuple[int, bool]] = field(default_factory=dict)
    refused_traces: set[str] = field(default_factory=set)
    refused_spans: int = 0

    def merge(self, part: dict[str, Any]) -> None:
        for trace_id, (spans, failed) in part["traces"].items():
            self.traces[trace_id] = (spans, failed)
        self.refused_traces.update(part["refused_traces"])
        self.refused_spans += part["refused_spans"]


def account(sent: Sent, workdir: Path) -> dict[str, Any]:
    """Every sent trace: whole on one gateway, split, partial, missing; duplicates."""
    unsampled = landed(workdir, "traces")
    outcome: Counter[str] = Counter()
    duplicated_spans = 0
    per_gateway: Counter[str] = Counter()
    for trace_id, (spans, _) in sent.traces.items():
        if trace_id in sent.refused_traces:
            outcome["refused by the agent"] += 1
            continue
        where = unsampled.get(trace_id, {})
        distinct = {span for counts in where.values() for span in counts}
        duplicated_spans += sum(n - 1 for counts in where.values() for n in counts.values())
        if not where:
            outcome["missing"] += 1
        elif len(where) > 1:
            outcome["split over gateways"] += 1
        elif len(distinct) < spans:
            outcome["partial"] += 1
        else:
            outcome["whole on one gateway"] += 1
            per_gateway[next(iter(where))] += 1
    unknown = set(unsampled) - set(sent.traces)
    return {
        "traces sent": len(sent.traces),
        **dict(outcome),
        "per gateway": dict(per_gateway),
        "spans written twice or more": duplicated_spans,
        "traces not sent by the emitters": len(unknown),
    }


def sampling(sent: Sent, workdir: Path) -> dict[str, Any]:
    """Under tail sampling: failing traces kept whole; the rest whole or not at all."""
    kept = landed(workdir, "sampled")
    errors: Counter[str] = Counter()
    rest: Counter[str] = Counter()
    for trace_id, (spans, failed) in sent.traces.items():
        if trace_id in sent.refused_traces:
            continue
        distinct = {span for counts in kept.get(trace_id, {}).values() for span in counts}
        state = "whole" if len(distinct) == spans else "partial" if distinct else "dropped"
        (errors if failed else rest)[state] += 1
    others = sum(rest.values())
    return {
        "failing traces": dict(errors),
        "other traces": dict(rest),
        "share of the others kept, %": round(100 * rest["whole"] / others, 2) if others else None,
    }


# -- the emitters --------------------------------------------------------------


def run_agents(endpoint: str, runs: int, seed: int) -> dict[str, Any]:
    """Real adk-otel runs on ADK, exported by the SDK's OTLP gRPC exporter."""
    logging.disable(logging.CRITICAL)  # ADK logs each failing tool's traceback
    from google.adk.agents import LlmAgent
    from google.adk.runners import InMemoryRunner
    from google.genai import types
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult
    from opentelemetry.trace import StatusCode

    import adk_otel
    from adk_otel.testing.model import ScriptedModel, call, reply

    def lookup(sku: str) -> dict[str, Any]:
        """Stock level of one SKU."""
        if sku == "BAD":
            raise ValueError("unknown sku")
        return {"sku": sku, "in_stock": 3}

    traces: dict[str, list[Any]] = defaultdict(lambda: [0, False])
    failed_export = 0

    class Record(SpanProcessor):
        def on_end(self, span: ReadableSpan) -> None:
            assert span.context is not None
            entry = traces[f"{span.context.trace_id:032x}"]
            entry[0] += 1
            entry[1] = entry[1] or span.status.status_code is StatusCode.ERROR

    class Counting(OTLPSpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            nonlocal failed_export
            result = super().export(spans)
            if result is not SpanExportResult.SUCCESS:
                failed_export += len(spans)
            return result

    provider = TracerProvider(resource=Resource.create({"service.name": f"emitter-{seed}"}))
    provider.add_span_processor(Record())
    exporter = Counting(endpoint=f"http://{endpoint}", insecure=True, timeout=10)
    provider.add_span_processor(
        BatchSpanProcessor(exporter, max_queue_size=1 << 17, schedule_delay_millis=200)
    )

    def runner(sku: str) -> InMemoryRunner:
        model = ScriptedModel(script=[call("lookup", {"sku": sku}), reply("3 in stock")])
        agent = LlmAgent(name="clerk", model=model, tools=[lookup])
        return adk_otel.instrument(
            InMemoryRunner(agent=agent, app_name="two-tier"), tracer_provider=provider
        )

    ok, failing = runner("A1"), runner("BAD")
    message = types.Content(role="user", parts=[types.Part(text="stock?")])
    chooser = random.Random(seed)

    async def main() -> None:
        for _ in range(runs):
            chosen = failing if chooser.random() < ERROR_SHARE else ok
            session = await chosen.session_service.create_session(app_name="two-tier", user_id="u")
            try:
                async for _ in chosen.run_async(
                    user_id="u", session_id=session.id, new_message=message
                ):
                    pass
            except ValueError:
                pass  # the failing tool: its run ends in error, traced
            await chosen.session_service.delete_session(
                app_name="two-tier", user_id="u", session_id=session.id
            )

    asyncio.run(main())
    provider.shutdown()
    refused = set(traces) if failed_export else set()  # not known per trace: all in doubt
    return {
        "traces": {key: tuple(value) for key, value in traces.items()},
        "refused_traces": sorted(refused),
        "refused_spans": failed_export,
    }


def templates() -> dict[str, bytes]:
    """One passing and one failing adk-otel trace, as OTLP requests (real runs)."""
    logging.disable(logging.CRITICAL)
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    import adk_otel
    from adk_otel.testing.model import ScriptedModel, call, reply

    out: dict[str, bytes] = {}
    for kind, sku in (("ok", "A1"), ("error", "BAD")):
        memory = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(memory))

        def lookup(sku: str) -> dict[str, Any]:
            """Stock level of one SKU."""
            if sku == "BAD":
                raise ValueError("unknown sku")
            return {"sku": sku, "in_stock": 3}

        from google.adk.agents import LlmAgent
        from google.adk.runners import InMemoryRunner
        from google.genai import types

        model = ScriptedModel(script=[call("lookup", {"sku": sku}), reply("3 in stock")])
        runner = adk_otel.instrument(
            InMemoryRunner(agent=LlmAgent(name="clerk", model=model, tools=[lookup]), app_name="t"),
            tracer_provider=provider,
        )

        async def once(runner: Any = runner) -> None:
            session = await runner.session_service.create_session(app_name="t", user_id="u")
            message = types.Content(role="user", parts=[types.Part(text="stock?")])
            try:
                async for _ in runner.run_async(
                    user_id="u", session_id=session.id, new_message=message
                ):
                    pass
            except ValueError:
                pass

        asyncio.run(once())
        out[kind] = encode_spans(memory.get_finished_spans()).SerializeToString()
    return out


def replay(
    endpoint: str, template: dict[str, bytes], rate: float, seconds: float, seed: int
) -> dict[str, Any]:
    """Those traces again under new trace ids at ``rate`` spans/s for ``seconds``: each
    request carries the children of this batch's traces and the roots of the last one's,
    so every trace reaches the agent in two requests."""
    import grpc
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

    Request = trace_service_pb2.ExportTraceServiceRequest
    parsed = {kind: Request.FromString(data) for kind, data in template.items()}
    shapes = {}
    for kind, request in parsed.items():
        resource = request.resource_spans[0]
        spans = [span for scope in resource.scope_spans for span in scope.spans]
        shapes[kind] = (
            resource,
            [s for s in spans if s.parent_span_id],
            [s for s in spans if not s.parent_span_id],
        )
    chooser = random.Random(seed)
    channel = grpc.insecure_channel(endpoint)
    stub = trace_service_pb2_grpc.TraceServiceStub(channel)  # type: ignore[no-untyped-call]
    per_request = 40
    traces: dict[str, tuple[int, bool]] = {}
    refused: set[str] = set()
    refused_spans = 0
    pending_roots: list[tuple[str, str]] = []  # (trace id hex, kind) waiting for their roots
    start = time.monotonic()
    sent_spans = 0

    def request_for(children: list[tuple[str, str]], roots: list[tuple[str, str]]) -> Any:
        request = Request()
        resource_spans = request.resource_spans.add()
        resource_spans.resource.CopyFrom(shapes["ok"][0].resource)
        scope = resource_spans.scope_spans.add()
        scope.scope.CopyFrom(shapes["ok"][0].scope_spans[0].scope)
        for trace_hex, kind in children:
            for span in shapes[kind][1]:
                copy_ = scope.spans.add()
                copy_.CopyFrom(span)
                copy_.trace_id = bytes.fromhex(trace_hex)
        for trace_hex, kind in roots:
            for span in shapes[kind][2]:
                copy_ = scope.spans.add()
                copy_.CopyFrom(span)
                copy_.trace_id = bytes.fromhex(trace_hex)
        return request

    def send(request: Any, ids: list[str]) -> None:
        nonlocal refused_spans, sent_spans
        count = len(request.resource_spans[0].scope_spans[0].spans)
        try:
            stub.Export(request, timeout=10)
        except grpc.RpcError:
            refused_spans += count
            refused.update(ids)
        sent_spans += count

    while True:
        elapsed = time.monotonic() - start
        done = elapsed >= seconds
        batch: list[tuple[str, str]] = []
        if not done:
            for _ in range(per_request):
                kind = "error" if chooser.random() < ERROR_SHARE else "ok"
                trace_hex = f"{chooser.getrandbits(128):032x}"
                traces[trace_hex] = (len(shapes[kind][1]) + len(shapes[kind][2]), kind == "error")
                batch.append((trace_hex, kind))
        request = request_for(batch, pending_roots)
        send(request, [t for t, _ in batch + pending_roots])
        pending_roots = batch
        if done:
            break
        ahead = sent_spans / rate - (time.monotonic() - start)
        if ahead > 0:
            time.sleep(ahead)  # pacing to the offered rate
    return {
        "traces": traces,
        "refused_traces": sorted(refused),
        "refused_spans": refused_spans,
        "seconds": time.monotonic() - start,
    }


def pool(workers: int) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))


# -- the stages ----------------------------------------------------------------


def stage_routing(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    set_up = start_set_up(
        args.collector,
        workdir,
        queue="persistent",
        sample_percent=SAMPLE_PERCENT,
        memory_limit_mib=None,
    )
    try:
        sent = Sent()
        started = time.monotonic()
        with pool(args.emitters) as emitters:
            futures = [
                emitters.submit(run_agents, set_up.endpoint, args.runs, seed)
                for seed in range(args.emitters)
            ]
            for future in futures:
                sent.merge(future.result(timeout=1800))
        emitted = time.monotonic() - started
        # A trace is decided 10 s after its root arrived (decision_wait_after_root_received).
        wait_until_settled(set_up, quiet=15, limit=180)
        for collector in set_up.collectors:
            collector.scrape()
        return {
            "emitters": args.emitters,
            "seconds emitting": round(emitted, 1),
            "sample percent": SAMPLE_PERCENT,
            "routing": account(sent, workdir),
            "tail sampling": sampling(sent, workdir),
            "metrics": metrics(set_up),
        }
    finally:
        set_up.stop()


def metrics(set_up: SetUp) -> dict[str, dict[str, float]]:
    wanted = (
        "otelcol_receiver_accepted_spans",
        "otelcol_receiver_refused_spans",
        "otelcol_exporter_sent_spans",
        "otelcol_exporter_send_failed_spans",
        "otelcol_exporter_enqueue_failed_spans",
        "otelcol_processor_tail_sampling_sampling_trace_dropped_too_early",
    )
    return {
        collector.name: {
            name.removeprefix("otelcol_"): collector.total(name)
            for name in wanted
            if any(name in life for life in [*collector.lives, collector.last])
        }
        for collector in set_up.collectors
    }


def stage_restart(
    args: argparse.Namespace, workdir: Path, queue: str, how: signal.Signals
) -> dict[str, Any]:
    template = templates()
    set_up = start_set_up(
        args.collector,
        workdir,
        queue=queue,
        sample_percent=SAMPLE_PERCENT,
        memory_limit_mib=None,
    )
    victim = set_up.gateways[1]
    try:
        sent = Sent()
        seconds = args.restart_seconds
        with pool(args.emitters) as emitters:
            futures = [
                emitters.submit(
                    replay, set_up.endpoint, template, args.restart_rate / args.emitters, seconds, s
                )
                for s in range(args.emitters)
            ]
            time.sleep(seconds / 3)  # the kill lands mid-stream
            killed_at = time.monotonic()
            victim.kill(how)
            time.sleep(args.down_seconds)
            victim.start()
            down = time.monotonic() - killed_at
            for future in futures:
                sent.merge(future.result(timeout=seconds + 600))
        wait_until_settled(set_up, quiet=15, limit=400)
        for collector in set_up.collectors:
            collector.scrape()
        return {
            "agent queue": queue,
            "gateway stopped by": how.name,
            "offered spans/s": args.restart_rate,
            "gateway down, s": round(down, 1),
            "routing": account(sent, workdir),
            "tail sampling": sampling(sent, workdir),
            "metrics": metrics(set_up),
        }
    finally:
        set_up.stop()


def stage_throughput(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    template = templates()
    set_up = start_set_up(
        args.collector,
        workdir,
        queue="persistent",
        sample_percent=SAMPLE_PERCENT,
        memory_limit_mib=args.memory_limit_mib,
    )
    steps = []
    try:
        for rate in args.rates:
            before = {c.name: dict(c.scrape()) for c in set_up.collectors}
            peak: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
            with pool(args.emitters) as emitters:
                futures = [
                    emitters.submit(
                        replay,
                        set_up.endpoint,
                        template,
                        rate / args.emitters,
                        args.step_seconds,
                        s,
                    )
                    for s in range(args.emitters)
                ]
                started = time.monotonic()
                while not all(future.done() for future in futures):
                    for collector in set_up.collectors:
                        values = collector.scrape()
                        for name in (
                            "otelcol_process_runtime_heap_alloc_bytes",
                            "otelcol_process_memory_rss",
                        ):
                            peak[collector.name][name] = max(
                                peak[collector.name][name], values.get(name, 0.0)
                            )
                    time.sleep(0.5)
                    if time.monotonic() - started > args.step_seconds + 300:
                        break
                results = [future.result(timeout=60) for future in futures]
            took = max(result["seconds"] for result in results)
            after = {c.name: c.scrape() for c in set_up.collectors}

            def delta(name: str, collector: str, after: Any = after, before: Any = before) -> float:
                return float(after[collector].get(name, 0.0) - before[collector].get(name, 0.0))

            accepted = delta("otelcol_receiver_accepted_spans", "agent")
            offered = sum(
                sum(spans for spans, _ in result["traces"].values()) for result in results
            )
            step = {
                "offered spans/s": rate,
                "sent spans/s": round(offered / took),
                "agent accepted spans/s": round(accepted / took),
                "refused at the emitters (spans)": sum(r["refused_spans"] for r in results),
                "agent refused (spans)": delta("otelcol_receiver_refused_spans", "agent"),
                "gateways accepted spans/s": round(
                    sum(delta("otelcol_receiver_accepted_spans", g.name) for g in set_up.gateways)
                    / took
                ),
                "gateways refused (spans)": sum(
                    delta("otelcol_receiver_refused_spans", g.name) for g in set_up.gateways
                ),
                "agent send failed (spans)": delta("otelcol_exporter_send_failed_spans", "agent"),
                "peak heap MiB": {
                    name: round(values["otelcol_process_runtime_heap_alloc_bytes"] / 2**20)
                    for name, values in peak.items()
                },
                "peak RSS MiB": {
                    name: round(values["otelcol_process_memory_rss"] / 2**20)
                    for name, values in peak.items()
                },
            }
            steps.append(step)
            print(json.dumps(step), flush=True)
            refused = step["refused at the emitters (spans)"] or step["agent refused (spans)"]
            if refused or accepted < 0.9 * offered:
                break
        return {
            "memory limiter": {c.name: c.memory_limiter_line() for c in set_up.collectors},
            "steps": steps,
        }
    finally:
        set_up.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--collector", required=True, help="path of the collector binary")
    parser.add_argument("--stages", default="routing,restart,throughput")
    parser.add_argument("--emitters", type=int, default=4, help="emitting processes")
    parser.add_argument("--runs", type=int, default=1000, help="agent runs per emitter")
    parser.add_argument("--restart-rate", type=float, default=3000, help="spans/s offered")
    parser.add_argument("--restart-seconds", type=float, default=30)
    parser.add_argument("--down-seconds", type=float, default=5)
    parser.add_argument(
        "--rates",
        type=lambda s: [float(x) for x in s.split(",")],
        default=[5000, 10000, 20000, 40000],
    )
    parser.add_argument("--step-seconds", type=float, default=15)
    parser.add_argument(
        "--signals", default="SIGKILL,SIGTERM", help="how the restart stage stops a gateway"
    )
    parser.add_argument(
        "--memory-limit-mib",
        type=int,
        help="the throughput stage with a fixed memory limit per collector; default: as shipped",
    )
    parser.add_argument("--json", type=Path, help="write the results here too")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    args = parser.parse_args()
    if not Path(args.collector).is_file():
        parser.error(f"{args.collector}: no collector binary there")
    scratch = Path(tempfile.mkdtemp(prefix="two-tier-"))
    results: dict[str, Any] = {}
    try:
        for stage in args.stages.split(","):
            print(f"== {stage}", flush=True)
            if stage == "routing":
                results[stage] = stage_routing(args, scratch / stage)
            elif stage == "restart":
                results[stage] = [
                    stage_restart(args, scratch / f"restart-{queue}-{how.name}", queue, how)
                    for queue, how in RESTARTS
                    if how.name in args.signals
                ]
            elif stage == "throughput":
                results[stage] = stage_throughput(args, scratch / stage)
            else:
                parser.error(f"unknown stage {stage!r}")
            print(json.dumps(results[stage], indent=2), flush=True)
    finally:
        if args.json:
            args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        if args.keep:
            print(f"scratch folder kept: {scratch}", file=sys.stderr)
        else:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
