"""Span bookkeeping, ADK-free (an import contract in pyproject.toml says so):
open a span and end it exactly once (spans.py), the numbers each span keeps
and rolls up (facts.py), the metric instruments (metrics.py), and the ledger
the plugin uses, which adds roll-ups, metrics and content events at every
span's end (telemetry.py)."""
