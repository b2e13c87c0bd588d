"""The ``adk-otel`` command: its subcommands (main.py), the regression gates
(compare.py) and the bundled demo apps (demo.py, demo_remote.py).

Imports nothing of ADK until ``adk-otel demo`` runs: reading traces needs none.
"""

from .main import main

__all__ = ["main"]
