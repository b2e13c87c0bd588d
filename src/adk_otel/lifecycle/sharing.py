"""One plugin, several Runners: which Runner is closing.

ADK builds one ``PluginManager`` per Runner. The plugins of an ``App`` are
shared by every Runner built from it (ADK's evaluation builds one per eval
case, running several at once; a server may build one per request), and each
Runner's ``close()`` calls ``close()`` on every plugin, without saying which
Runner it is. Ending every open span there would cut short the runs of the
other Runners still running.

So the plugin puts a :class:`CloseWitness` right in front of itself in each
Runner's plugin list (``PluginManager.plugins``, the list ADK iterates, public
on ADK 2.5 through 2.13). ADK closes plugins in list order, one after the
other, so the witness's ``close()`` names its Runner just before the plugin's
own ``close()`` runs; the plugin then ends only that Runner's runs. The witness
has no hooks of its own (every callback is ``BasePlugin``'s ``None``), so it
never changes a run.

The witness goes in at ``before_run`` when the plugin is already first in the
list. ADK is iterating that list then: inserting at the front moves the plugin
one place on, so ADK calls the plugin's ``before_run`` a second time for the
same run (ignored, see ``AdkOtelPlugin.before_run_callback``) and every later
plugin exactly once. When the plugin was not first (``runs.put_first()``
moves it), the witness waits for that Runner's next run.

A Runner's close ends everything when no other Runner is open (as a Runner's
close always did). A close no witness names (``plugin.close()`` called
directly, or a Runner that never ran through the plugin) cannot tell whose
runs to end: it ends everything while at most one Runner is open (the usual
single-Runner app, unchanged), and only the runs no open Runner owns while
two or more are.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from google.adk.plugins.base_plugin import BasePlugin


class CloseWitness(BasePlugin):
    """Tells its plugin which Runner's ``close()`` is running."""

    def __init__(self, sharing: Sharing | None, manager: Any, name: str) -> None:
        super().__init__(name=name)
        self._sharing = sharing
        self._manager: Callable[[], Any] = (
            weakref.ref(manager) if manager is not None else _no_manager
        )

    def __reduce__(self) -> tuple[Any, ...]:
        """Copied or pickled with the plugin list it sits in: a witness names
        a Runner of this process, so its copy names none (its ``close()`` does
        nothing, as for a close no witness names); the plugin's copy is a new
        plugin that gives itself a witness of its own (travel.py)."""
        return (CloseWitness, (None, None, self.name))

    @property
    def witness_for(self) -> Sharing | None:
        return self._sharing

    def watches(self, sharing: Sharing, manager: Any) -> bool:
        """Whether this witness names ``manager`` to ``sharing`` (an
        ``AgentTool``'s Runner copies its parent's list, witness included)."""
        return self._sharing is sharing and self._manager() is manager

    async def close(self) -> None:
        manager, sharing = self._manager(), self._sharing
        if manager is not None and sharing is not None:
            sharing.closing(manager)


def _no_manager() -> None:
    """The manager of a witness that names none (a copy's)."""
    return None


class Sharing:
    """The Runners (plugin managers) a plugin runs under, and which one is closing."""

    def __init__(self, owner: Any) -> None:
        self._owner = weakref.ref(owner)
        self._open: weakref.WeakSet[Any] = weakref.WeakSet()
        """Plugin managers with a witness that have not closed."""
        self._closing: weakref.ref[Any] | None = None
        self._last: weakref.ref[Any] | None = None
        """The open, witnessed plugin manager of the latest run."""

    def enlist(self, invocation_context: Any, first: bool) -> Any:
        """The run's plugin manager, given a witness in front of the plugin
        when it has none and the plugin was ``first`` in its list as ADK
        began calling ``before_run``. None when there is no manager to read."""
        manager = getattr(invocation_context, "plugin_manager", None)
        last = self._last
        if last is not None and last() is manager is not None:
            return manager  # the Runner of the previous run, still open (the usual case)
        plugins = getattr(manager, "plugins", None)
        owner = self._owner()
        if manager is None or plugins.__class__ is not list or owner is None:
            return None
        if manager in self._open:
            return manager
        if any(isinstance(p, CloseWitness) and p.watches(self, manager) for p in plugins):
            self._open.add(manager)  # closed once, running again
        elif first and plugins and plugins[0] is owner:
            plugins.insert(0, CloseWitness(self, manager, f"{owner.name}_close_witness"))
            self._open.add(manager)
        else:
            return manager
        self._last = weakref.ref(manager)
        return manager

    def closing(self, manager: Any) -> None:
        """``manager``'s Runner is closing: the plugin's ``close()`` is next."""
        self._closing = weakref.ref(manager)
        self._open.discard(manager)
        if self._last is not None and self._last() is manager:
            self._last = None

    def take_closing(self) -> Any:
        """The plugin manager whose Runner is closing the plugin now, if a
        witness named one (read once)."""
        closing, self._closing = self._closing, None
        return closing() if closing is not None else None

    def open_count(self) -> int:
        """How many witnessed Runners have not closed yet."""
        return len(self._open)

    def owned_by_open_runner(self, manager: Any) -> bool:
        """Whether ``manager`` is a witnessed Runner's that has not closed."""
        return manager is not None and manager in self._open


def leads(plugins: list[Any], plugin: Any) -> bool:
    """Whether ``plugin`` is first in ``plugins``, its witness aside."""
    if not plugins:
        return False
    first = plugins[0]
    if first is plugin:
        return True
    return first.__class__ is CloseWitness and plugins[1:2] == [plugin]
