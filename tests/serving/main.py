"""A production entry point, as ``adk deploy cloud_run`` writes one: ADK's
FastAPI app with adk-otel as an extra plugin, served by uvicorn or gunicorn."""

import os

from google.adk.cli.fast_api import get_fast_api_app

app = get_fast_api_app(
    agents_dir=os.environ["SERVING_AGENTS"],
    web=False,
    use_local_storage=False,  # in memory: several processes and runs at once
    extra_plugins=["adk_otel.AdkOtelPlugin"],
)
