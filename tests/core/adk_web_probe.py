"""Runs in a fresh process: ADK's own web server app (what `adk web` serves)
with `--extra_plugins adk_otel.AdkOtelPlugin`, one run, then its trace panel."""

import json
import sys
import warnings

warnings.filterwarnings("ignore")

from fastapi.testclient import TestClient  # noqa: E402
from google.adk.cli.fast_api import get_fast_api_app  # noqa: E402

app = get_fast_api_app(agents_dir=sys.argv[1], web=True, extra_plugins=["adk_otel.AdkOtelPlugin"])
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
    panel = client.get(f"/dev/apps/shop/debug/trace/session/{session_id}")
print(json.dumps({"run": run.status_code, "panel": panel.status_code, "spans": panel.json()}))
