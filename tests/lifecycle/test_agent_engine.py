"""Vertex AI Agent Engine's ``AdkApp`` (google-cloud-aiplatform) serving an
instrumented App, offline (docs/deploy.md).

Deploying goes through aiplatform's own code: ``_validate_agent_engine_or_raise``
clones the ``AdkApp`` (``AdkApp.clone()`` deep-copies the App) and
``_upload_agent_engine`` cloudpickles the clone into a Cloud Storage blob; the
server loads that blob in a fresh process and calls ``set_up()``. Here the
blob is a local file (the only stand-in: Cloud Storage), the server a
subprocess. Telemetry stays off (``AdkApp``'s own telemetry is another
matter: its span processor swap).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import adk_otel
from adk_otel import AdkOtelPlugin
from adk_otel.testing.receiver import OtlpReceiver

from .harness import assert_clean
from .test_copies import fresh, per_trace, plugin_in, received_traces, run_probe
from .travel_agents import CLERK_SPANS, clerk_app

agent_engines = pytest.importorskip("vertexai.agent_engines")
deploying = pytest.importorskip("vertexai.agent_engines._agent_engines")
initializer = pytest.importorskip("google.cloud.aiplatform.initializer")
AnonymousCredentials = pytest.importorskip("google.auth.credentials").AnonymousCredentials

# stream_query and create_session are deprecated in favour of their async forms: both are served.
pytestmark = pytest.mark.filterwarnings("ignore:AdkApp.*deprecated:DeprecationWarning")


@pytest.fixture(autouse=True)
def vertex_offline(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``vertexai.init(...)`` on a configuration of this test's own, offline."""
    for name in ("GOOGLE_CLOUD_AGENT_ENGINE_ENABLE_TELEMETRY", "GOOGLE_CLOUD_AGENT_ENGINE_ID"):
        monkeypatch.delenv(name, raising=False)
    config = initializer._Config()
    config.init(project="test-project", location="us-central1", credentials=AnonymousCredentials())
    monkeypatch.setattr(initializer, "global_config", config)
    yield


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
