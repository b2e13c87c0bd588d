"""``transfer_to_agent``: ADK ends the calling agent's turn without an
``after_agent`` hook, so its span is ended here, OK (``transferred``), when
the target agent starts."""

from __future__ import annotations

from typing import Any

from .. import semconv as sc
from ..ledger.telemetry import TelemetryLedger
from ..semconv import Outcome
from ..util import sanitize
from .runs import Run, Runs

TRANSFER = "transfer_to_agent"
"""The name of ADK's transfer tool."""


def note(runs: Runs, tool_context: Any, tool_args: Any) -> None:
    """The calling agent asked for a transfer: it ends when the target starts."""
    run = runs.latest(tool_context.invocation_id)
    source = run.innermost_agent(tool_context.agent_name) if run is not None else None
    target = tool_args.get("agent_name") if isinstance(tool_args, dict) else None
    if run is None or source is None or not isinstance(target, str):
        return
    if run.transfers is None:
        run.transfers = {}
    run.transfers.setdefault(target, []).append(source)


def end_transferred(ledger: TelemetryLedger, run: Run, target: str) -> None:
    """Agent ``target`` starts: end the agents that transferred to it."""
    assert run.transfers is not None
    for source in run.transfers.pop(target, ()):
        if not source.ended:
            ledger.end_entry(
                source,
                Outcome.OK,
                reason=sc.CLOSE_REASON_TRANSFERRED,
                extra={sc.ADK_TRANSFER_TARGET: sanitize.clean(target)},
            )
