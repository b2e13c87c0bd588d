"""An agent module as ``AgentEvaluator`` loads one (``<package>.agent`` with
``root_agent`` and ``app``): the scripted clerk, adk-otel in its App."""

from __future__ import annotations

from google.adk.apps import App

import adk_otel

from .. import evalkit

root_agent = evalkit.agent()
app = App(name=evalkit.APP, root_agent=root_agent, plugins=[adk_otel.AdkOtelPlugin()])
