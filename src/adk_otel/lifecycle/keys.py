"""Pairing keys: how a terminal hook finds the span its "before" hook opened.

ADK hands a layer's hooks no handle of their own, so each span is filed in the
ledger under a key both ends build from what ADK gives them (docs/lifecycle.md
says which hook opens and which ends each span):

* a run by its ``InvocationContext`` object, the same object in every hook of
  the run;
* a model call by the ``EventActions`` object its callback context carries,
  the same object in its after and error hooks and in the event that carries
  its response;
* a tool call by ``(invocation_id, function_call_id)``, which its after and
  error hooks and its function response event carry too;
* an agent run and a workflow node run by a serial number: their closers find
  them through the run (a stack per agent name, for loop iterations and
  retries) or the node tracer, not by key; an agent run with no run in sight
  (the plugin added mid-run) by ``(invocation_id, agent name)`` among the
  orphans (``orphan``).

Only this module builds them, so both ends always build the same key.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

Key = tuple[object, ...]


def run(invocation_context: object) -> Key:
    return ("run", id(invocation_context))


def model(actions: object) -> Key:
    return ("model", id(actions))


def is_model(key: object) -> bool:
    """Whether ``key`` is a model call's (:func:`model`)."""
    return isinstance(key, tuple) and len(key) == 2 and key[0] == "model"


def tool(invocation_id: object, call_id: object) -> Key:
    return ("tool", invocation_id, call_id)


def orphan(invocation_id: str, agent_name: str) -> tuple[str, str]:
    """An agent span opened with no run in sight, among ``Runs.orphans``."""
    return (invocation_id, agent_name)


def agents() -> Iterator[Key]:
    """A new agent-run key at each ``next()``: ``("agent", serial)``, made
    in C (one per agent run)."""
    return zip(itertools.repeat("agent"), itertools.count())


def nodes() -> Iterator[Key]:
    """A new node-run key at each ``next()``: ``("node", serial)``."""
    return zip(itertools.repeat("node"), itertools.count())
