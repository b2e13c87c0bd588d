"""Traces into ADK eval sets: a captured run becomes an eval case ADK runs as it is.

The runs a trace file holds (:mod:`.runs`), which of them to keep (:mod:`.selection`),
their captured content read back as ``google.genai`` content (:mod:`.captured`), and
the ``EvalSet`` JSON built from them (:mod:`.build`). Written from trace data
alone, without importing ADK: reading traces must not load an agent framework;
the tests check the result with ADK's own models and loader.
"""
