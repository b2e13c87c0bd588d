"""This checkout's adk-otel in every Python the suite starts.

A child Python imports adk-otel from its path; left to the environment, that is
wherever the environment installed adk-otel, which need not be this checkout
(an environment made from another copy). The suite tests the code beside it, so
every child puts this checkout's ``src/`` first: tests/conftest.py puts it on
``PYTHONPATH`` for children that inherit the environment, and a child given a
``PYTHONPATH`` of its own takes it from ``python_path``.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"


def python_path(*more: str | Path) -> str:
    """``PYTHONPATH`` for a child Python: this checkout's ``src/``, then
    ``more``, then the path the environment already had (each entry once)."""
    inherited = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    entries = [str(SRC), *map(str, more), *inherited]
    return os.pathsep.join(dict.fromkeys(entry for entry in entries if entry))
