"""Vertex AI Agent Engine's ``AdkApp`` (google-cloud-aiplatform) serving an
instrumented App, offline (docs/deploy.md).

Deploying goes through aiplatform's own code: ``_validate_agent_engine_or_raise``
clones the ``AdkApp`` (``AdkApp.clone()`` deep-copies the App) and
``_upload_agent_engine`` cloudpickles the clone into a Cloud Storage blob; the
server loads that blob in a fresh process and calls ``set_up()``. Here the
blob is a local file (the only stand-in: Cloud Storage), the server a
subprocess. With ``AdkApp``'s own telemetry on, its exporter sends to the
test's receiver instead of Google's endpoint (anonymous credentials), and its
span processor swap in ``set_up()`` happens as it does on the platform; each
set-up order runs in a fresh process (``engine_telemetry_probe.py``).
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from checkout import python_path

import adk_otel
from adk_otel import AdkOtelPlugin
from adk_otel.testing.receiver import OtlpReceiver

from .harness import assert_clean
from .test_copies import fresh, per_trace, plugin_in, received_traces, run_probe
from .travel_agents import CLERK_SPANS, FLOW_SPANS, clerk_app

agent_engines = pytest.importorskip("vertexai.agent_engines")
deploying = pytest.importorskip("vertexai.agent_engines._agent_engines")
initializer = pytest.importorskip("google.cloud.aiplatform.initializer")
AnonymousCredentials = pytest.importorskip("google.auth.credentials").AnonymousCredentials

# stream_query and create_session are deprecated in favour of their async forms: both are served.
# Each test runs AdkApp, and most a fresh process besides: beyond tests/lifecycle's 20 s.
pytestmark = [
    pytest.mark.filterwarnings("ignore:AdkApp.*deprecated:DeprecationWarning"),
    pytest.mark.timeout(300),
]


@pytest.fixture(autouse=True)
def vertex_offline(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``vertexai.init(...)`` on a configuration of this test's own, offline."""
    for name in ("GOOGLE_CLOUD_AGENT_ENGINE_ENABLE_TELEMETRY", "GOOGLE_CLOUD_AGENT_ENGINE_ID"):
        monkeypatch.delenv(name, raising=False)
    config = initializer._Config()
    config.init(project="test-project", location="us-central1", credentials=AnonymousCredentials())
    monkeypatch.setattr(initializer, "global_config", config)
    # AdkApp.set_up() writes the process environment (GOOGLE_GENAI_USE_VERTEXAI,
    # GOOGLE_CLOUD_PROJECT, ...), which would steer later tests' models to Vertex AI.
    environ = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(environ)


class Blob:
    """A Cloud Storage blob written to a local file."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def open(self, mode: str) -> Any:
        return self.path.open(mode)


class Bucket:
    """The staging bucket ``_upload_agent_engine`` writes the pickle to."""

    name = "staging"

    def __init__(self, root: Path) -> None:
        self.root = root

    def blob(self, name: str) -> Blob:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        return Blob(path)


def set_ups() -> dict[str, Any]:
    return {
        "instrument": lambda: adk_otel.instrument(clerk_app()),
        "plugin": lambda: clerk_app(plugins=[AdkOtelPlugin()]),
    }


def deploy(adk_app: Any, root: Path) -> Path:
    """What ``agent_engines.create(adk_app)`` does before it calls the API:
    validate and clone, then cloudpickle the clone to the staging bucket."""
    clone = deploying._validate_agent_engine_or_raise(adk_app)
    assert clone is not adk_app
    deploying._upload_agent_engine(agent_engine=clone, gcs_bucket=Bucket(root), gcs_dir_name="d")
    return root / "d" / deploying._BLOB_FILENAME


@pytest.mark.parametrize("kind", ["instrument", "plugin"])
async def test_adk_app_runs_an_instrumented_app_locally(recorder, caplog, kind):
    app = set_ups()[kind]()
    adk_app = agent_engines.AdkApp(app=app)
    answered = [e async for e in adk_app.async_stream_query(message="hi", user_id="u")]
    answered += list(adk_app.stream_query(message="again", user_id="u"))
    assert answered
    assert per_trace(recorder) == [Counter(CLERK_SPANS)] * 2
    assert plugin_in(app).internal_errors == 0
    assert_clean(recorder, caplog.records)


@pytest.mark.parametrize("ran", [False, True], ids=["before-runs", "after-runs"])
@pytest.mark.parametrize("kind", ["instrument", "plugin"])
async def test_deploy_clones_and_pickles_and_the_server_traces_two_queries(
    recorder, caplog, tmp_path, kind, ran
):
    app = set_ups()[kind]()
    adk_app = agent_engines.AdkApp(app=app)
    if ran:
        assert [e async for e in adk_app.async_stream_query(message="hi", user_id="u")]
        assert per_trace(recorder) == [Counter(CLERK_SPANS)]

    blob = deploy(adk_app, tmp_path)

    # The clone's App is a deep copy: a new plugin, nothing of the local one's.
    clone = deploying._validate_agent_engine_or_raise(adk_app)
    fresh(plugin_in(app), plugin_in(clone._tmpl_attrs["app"]))
    with OtlpReceiver() as receiver:
        run_probe(blob, "cloudpickle", "adkapp", receiver.http_endpoint.removesuffix("/v1/traces"))
        # The server process has exited: its provider flushed at exit.
        traces = received_traces(receiver)
    assert traces == [Counter(CLERK_SPANS)] * 2
    assert_clean(recorder, caplog.records)


@pytest.mark.parametrize("kind", ["instrument", "plugin"])
async def test_deployed_with_agent_engine_telemetry_on_each_query_is_one_tree(
    recorder, caplog, tmp_path, kind
):
    """The server's AdkApp sets its telemetry up in ``set_up()``, after the App
    arrived: adk-otel's spans go through its provider and exporter, once each,
    the first query included, with no span of ADK's own beside them."""
    adk_app = agent_engines.AdkApp(app=set_ups()[kind]())
    blob = deploy(adk_app, tmp_path)
    with OtlpReceiver() as receiver:
        endpoint = receiver.http_endpoint.removesuffix("/v1/traces")
        run_probe(blob, "cloudpickle", "adkapp", endpoint, telemetry=True)
        traces = received_traces(receiver)
    assert traces == [Counter(CLERK_SPANS)] * 2


ENGINE_PROBE = Path(__file__).with_name("engine_telemetry_probe.py")


def engine_run(setup: str, app: str, endpoint: str, *more: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "ADK_OTEL_"))}
    env = {
        **clean,
        "PYTHONPATH": python_path(Path(__file__).parent),
        "TELEMETRY_RECEIVER": endpoint,
        "OTEL_TRACES_EXPORTER": "none",  # adk-otel's own pipeline, if it built one, sends nothing
    }
    if not setup.endswith("enable_tracing"):
        env["GOOGLE_CLOUD_AGENT_ENGINE_ENABLE_TELEMETRY"] = "true"
    if setup == "env":
        env["OTEL_PYTHON_TRACER_PROVIDER"] = "adk_otel"
    done = subprocess.run(
        [sys.executable, str(ENGINE_PROBE), setup, app, *more],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        check=False,
    )
    assert done.returncode == 0 and done.stdout.strip().endswith("done"), done.stderr[-3000:]
    assert "Failed to detach context" not in done.stderr, done.stderr[-3000:]
    return done


def loaded_first(done: subprocess.CompletedProcess[str]) -> bool:
    """Whether the probe's ADK had loaded its telemetry module when adk-otel was set up."""
    line = next(x for x in done.stdout.splitlines() if x.startswith("ADK telemetry loaded"))
    return line.endswith("True")


@functools.cache
def plain_imports_load_telemetry() -> bool:
    """Whether a plain agent's imports load ADK's telemetry module (ADK 2.5's do;
    newer ones leave it to the Runner)."""
    check = (
        "import sys, google.adk.agents, google.adk.apps; "
        "print('google.adk.telemetry.tracing' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", check], capture_output=True, text=True, timeout=120, check=True
    )
    return done.stdout.strip() == "True"


SWAPPED = "span processor was replaced after adk-otel was set up"


@pytest.mark.parametrize("app", ["clerk", "flow"])
@pytest.mark.parametrize(
    "setup", ["instrument", "plugin", "plugin_enable_tracing", "provider_first", "env"]
)
def test_agent_engine_telemetry_on_locally_loses_no_span(setup, app) -> None:
    """However adk-otel was set up before ``set_up()`` (resolved at once by
    ``instrument()``, an application's provider made first, the standard
    variable; or lazily by a plugin), both queries reach AdkApp's exporter as
    adk-otel's one tree each: the processor AdkApp swaps in is followed, and
    that is said once. Before, with adk-otel resolved first, every span went to
    the processor AdkApp had shut down. The first query is like the second,
    whether ADK's telemetry module was loaded before adk-otel was set up or only
    by ``set_up()``'s Runner, after AdkApp set its provider (the plain agent
    with a plugin: ADK's run span was above adk-otel's tree in the first query)."""
    with OtlpReceiver() as receiver:
        done = engine_run(setup, app, receiver.http_endpoint.removesuffix("/v1/traces"))
        traces = received_traces(receiver)
    stderr = done.stderr
    expected = Counter(CLERK_SPANS if app == "clerk" else FLOW_SPANS)
    assert traces == [expected] * 2, stderr[-3000:]
    assert stderr.count(SWAPPED) == (0 if setup.startswith("plugin") else 1), stderr[-3000:]
    workflow_first = app == "flow" and not setup.startswith("plugin")
    assert loaded_first(done) == (plain_imports_load_telemetry() or workflow_first)


@pytest.mark.parametrize("setup", ["plugin", "plugin_enable_tracing"])
def test_agent_engine_telemetry_without_the_genai_instrumentation(setup) -> None:
    """AdkApp turns OpenTelemetry's google-genai instrumentation on when it is
    installed; without it, the first query is like the second all the same."""
    with OtlpReceiver() as receiver:
        endpoint = receiver.http_endpoint.removesuffix("/v1/traces")
        done = engine_run(setup, "clerk", endpoint, "without-genai-instrumentation")
        traces = received_traces(receiver)
    said = done.stdout + done.stderr  # aiplatform's own logger
    assert "proceeding without GenAI instrumentation" in said, said[-3000:]
    assert traces == [Counter(CLERK_SPANS)] * 2, done.stderr[-3000:]
    assert loaded_first(done) == plain_imports_load_telemetry()
