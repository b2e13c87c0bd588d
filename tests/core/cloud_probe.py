"""Runs in a fresh process: ADK's server app with ``trace_to_cloud`` or
``otel_to_cloud`` and ``extra_plugins=["adk_otel.AdkOtelPlugin"]``, one run.
Cloud Trace cannot be reached here: the exporter ADK would send spans to is
replaced by an in-memory one (and ADK's credentials lookup by anonymous
credentials); everything else is ADK's own set-up. Prints what the cloud
exporter received."""

import json
import sys
import types
import warnings

warnings.filterwarnings("ignore")

import google.auth  # noqa: E402
from google.auth.credentials import AnonymousCredentials  # noqa: E402
from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)

CLOUD = InMemorySpanExporter()


class CloudTraceSpanExporter(InMemorySpanExporter):
    """Stands in for opentelemetry-exporter-gcp-trace's (``--trace_to_cloud``)."""

    def __init__(self, project_id: str) -> None:
        super().__init__()
        self.export = CLOUD.export  # type: ignore[method-assign]


cloud_trace = types.ModuleType("opentelemetry.exporter.cloud_trace")
cloud_trace.CloudTraceSpanExporter = CloudTraceSpanExporter  # type: ignore[attr-defined]
sys.modules["opentelemetry.exporter.cloud_trace"] = cloud_trace
google.auth.default = lambda *args, **kwargs: (AnonymousCredentials(), "test-project")

import google.adk.telemetry.google_cloud as gcp  # noqa: E402

# ``--otel_to_cloud``: ADK's Cloud Trace span processor, metrics and logs.
gcp._get_gcp_span_exporter = lambda *args, **kwargs: SimpleSpanProcessor(CLOUD)
gcp._get_gcp_metrics_exporter = lambda *args, **kwargs: None
gcp._get_gcp_logs_exporter = lambda *args, **kwargs: None

from fastapi.testclient import TestClient  # noqa: E402
from google.adk.cli.fast_api import get_fast_api_app  # noqa: E402

flag = sys.argv[2]
app = get_fast_api_app(
    agents_dir=sys.argv[1], web=False, extra_plugins=["adk_otel.AdkOtelPlugin"], **{flag: True}
)
with TestClient(app) as client:
    session_id = client.post("/apps/shop/users/u/sessions", json={}).json()["id"]
    run = client.post(
        "/run",
        json={
            "appName": "shop",
            "userId": "u",
            "sessionId": session_id,
            "newMessage": {"role": "user", "parts": [{"text": "hi"}]},
        },
    )
    trace.get_tracer_provider().force_flush()  # type: ignore[attr-defined]
spans = [
    {"name": s.name, "scope": s.instrumentation_scope.name, "id": s.context.span_id}
    for s in CLOUD.get_finished_spans()
]
print(json.dumps({"run": run.status_code, "spans": spans}))
