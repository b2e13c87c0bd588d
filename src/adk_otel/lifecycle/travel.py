"""What of a plugin travels when it is copied or pickled (docs/deploy.md).

Vertex AI Agent Engine deep-copies an ``App`` and pickles it (cloudpickle) for
upload, and a fresh server process unpickles it; multiprocessing, Ray and
Celery hand plugins and Apps across processes the same way. What a plugin
holds is of two kinds:

* what it was built with: its name and options (the keywords of
  ``AdkOtelPlugin`` and ``instrument()``), and the root workflows of the apps
  ``instrument()`` showed it (names only). These travel;
* what it built in this process: the span ledger and its lock, the tracer, the
  runs in flight, the weak references to Runners and agents, the provider
  pipeline. None of it travels: a copy builds its own on first use, as a new
  plugin does. It resolves its provider at its first run, so a platform that
  sets telemetry up after unpickling (Agent Engine's ``set_up()``) is found;
  the tracer ADK holds is answered for as the copy is made, so even the first
  run's workflow nodes get spans (``pipeline/held_tracer.py``).

So a copy of a plugin, made before, during or after runs, is a new plugin with
the same options: it shares no ledger, run or span with the original.

Providers (``tracer_provider``, ``meter_provider``, ``logger_provider``) are
objects of one process, with threads, locks and exporters: a deep copy keeps
the same provider (same process), a pickle drops it, and the plugin that
arrives sends its telemetry to the global providers of the process it arrives
in (logged once per process, where it is pickled and where it is unpickled).
"""

from __future__ import annotations

import logging
from typing import Any, TypedDict

from ..util.redact import guarded
from .options import PROVIDERS, Options, given
from .runs import Runs

logger: logging.Logger = guarded(logging.getLogger(__name__))


class State(TypedDict):
    """A plugin's travelling state (``AdkOtelPlugin.__getstate__``)."""

    name: str
    options: dict[str, Any]
    """The options given (``None`` ones left out)."""
    dropped: tuple[str, ...]
    """Provider options left behind (not pickled)."""
    workflows: dict[str, str]
    """App name -> its root ``Workflow``'s name (``Runs.workflows``)."""
    kinds: dict[str, dict[str, str]]
    """App name -> node names -> kinds (``Runs.kinds``)."""


_told: set[str] = set()
"""Where the dropped providers were logged already in this process."""


def state(name: str, chosen: Options, runs: Runs, *, pickled: bool) -> State:
    """The plugin's travelling state; ``pickled``: going to another process,
    so without its providers."""
    options = given(chosen)
    dropped: tuple[str, ...] = ()
    if pickled:
        dropped = tuple(key for key in PROVIDERS if key in options)
        for key in dropped:
            del options[key]
        if dropped:
            _tell("pickled", dropped)
    return State(
        name=name,
        options=options,
        dropped=dropped,
        workflows=dict(runs.workflows),
        kinds={app: dict(kinds) for app, kinds in runs.kinds.items()},
    )


def arrived(travelled: State, runs: Runs) -> None:
    """The plugin built from ``travelled`` takes its noted roots back."""
    for app, workflow in travelled["workflows"].items():
        runs.note_workflow(app, workflow, dict(travelled["kinds"].get(app) or {}))
    if travelled["dropped"]:
        _tell("unpickled", travelled["dropped"])


def _tell(where: str, dropped: tuple[str, ...]) -> None:
    if where in _told:
        return
    _told.add(where)
    if where == "pickled":
        logger.warning(
            "adk-otel: a plugin is being pickled without its %s: providers belong to "
            "one process; where it is unpickled its telemetry goes to that process's "
            "global providers (docs/deploy.md)",
            ", ".join(dropped),
        )
    else:
        logger.warning(
            "adk-otel: a plugin was unpickled without the %s it was built with: its "
            "telemetry goes to this process's global providers; set them up here "
            "(docs/deploy.md)",
            ", ".join(dropped),
        )
