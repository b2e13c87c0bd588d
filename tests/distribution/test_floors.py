"""The dependency floors in pyproject.toml are the versions CI's oldest run installs."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]


def _pins(script: str) -> dict[str, Version]:
    """``'name==version'`` pins in the CI script, by normalised name."""
    return {
        name.lower().replace("_", "-"): Version(version)
        for name, version in re.findall(r"'([A-Za-z0-9_.-]+)==([0-9][0-9.]*)'", script)
    }


def test_every_floor_is_installed_exactly_by_the_oldest_run() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    script = (ROOT / ".ci" / "run").read_text()
    oldest = script[script.index("oldest supported google-adk") :]
    pins = _pins(oldest)
    floors = {}
    for line in [*project["dependencies"], *project["optional-dependencies"]["grpc"]]:
        requirement = Requirement(line)
        [floor] = [s.version for s in requirement.specifier if s.operator == ">="]
        floors[requirement.name.lower()] = Version(floor)
    assert len(floors) == 7
    untested = {name: str(v) for name, v in floors.items() if pins.get(name) != v}
    assert not untested, f"floors CI does not install exactly: {untested}; pins: {pins}"
