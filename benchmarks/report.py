"""How a benchmark script hands over its results: the table on stdout and,
when asked for, the raw numbers as JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def emit(table: str, data: Any, json_path: Path | None) -> int:
    """Print ``table`` and write ``data`` to ``json_path`` (if given); the exit status."""
    print(table)
    if json_path is not None:
        json_path.write_text(json.dumps(data, indent=2) + "\n")
    return 0
