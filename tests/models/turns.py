"""What the counted-once tests share, in the test process and in the fresh child processes
(which import this module from their own directory): the run of one-call turns, and the
metric points read back. ADK is imported only when a run is asked for, so a child still turns
its instrumentation on before ADK's import."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


async def ask_turns(runner: Any, *, turns: int, streaming: bool) -> None:
    """``turns`` runs of one user question each (one model call), each in a new session."""
    from google.adk.agents.run_config import RunConfig, StreamingMode
    from google.genai import types

    mode = StreamingMode.SSE if streaming else StreamingMode.NONE
    for turn in range(turns):
        session = await runner.session_service.create_session(app_name=runner.app_name, user_id="u")
        async for _ in runner.run_async(
            user_id="u",
            session_id=session.id,
            new_message=types.UserContent(f"stock of A{turn}?"),
            run_config=RunConfig(streaming_mode=mode),
        ):
            pass


def metric_points(reader: Any, name: str) -> Iterator[tuple[str, Any]]:
    """``(scope name, data point)`` for every point of the metric ``name`` in ``reader``."""
    data = reader.get_metrics_data()
    for resource in data.resource_metrics if data is not None else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == name:
                    for point in metric.data.data_points:
                        yield scope.scope.name, point
