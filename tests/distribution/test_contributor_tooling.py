"""A contributor's tooling, checked offline: the GitHub Actions workflows
against the published workflow schema (check-jsonschema's bundled copy), the
pre-commit configuration with pre-commit's own validator, and both against
``.ci/run``, so CI, the hooks and the local script run the same checks."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"
CI = WORKFLOWS / "ci.yml"
RELEASE = WORKFLOWS / "release.yml"
PRE_COMMIT = ROOT / ".pre-commit-config.yaml"
CI_RUN = ROOT / ".ci" / "run"

# The commands of .ci/run that CI must run too (after the `.venv/bin/` prefix).
CHECKS = [
    "ruff check .",
    "ruff format --check .",
    "mypy --strict src/adk_otel",
    "pyright --verifytypes adk_otel --ignoreexternal",
    "mkdocs build --strict",
    "adk-otel demo",
    ".ci/wheel-smoke .venv/bin/python",
    "python -m pytest -q",
]


def _load(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], capture_output=True, text=True, timeout=120, cwd=ROOT
    )


def _steps_text(workflow: Any) -> str:
    return "\n".join(
        str(step.get("run", "")) + str(step.get("uses", ""))
        for job in workflow["jobs"].values()
        for step in job["steps"]
    )


@pytest.mark.parametrize("path", [CI, RELEASE], ids=lambda p: p.name)
def test_workflow_matches_the_published_schema(path: Path) -> None:
    done = _run("check_jsonschema", "--builtin-schema", "vendor.github-workflows", str(path))
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_schema_check_catches_a_broken_workflow(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yml"
    broken.write_text("on: push\njobs:\n  x:\n    steps: []\n", encoding="utf-8")  # no runs-on
    done = _run("check_jsonschema", "--builtin-schema", "vendor.github-workflows", str(broken))
    assert done.returncode != 0


def test_pre_commit_config_is_valid() -> None:
    done = _run("pre_commit", "validate-config", str(PRE_COMMIT))
    assert done.returncode == 0, done.stdout + done.stderr


def test_pre_commit_runs_what_ci_runs() -> None:
    hooks = [h for repo in _load(PRE_COMMIT)["repos"] for h in repo["hooks"]]
    entries = " | ".join(h["entry"] for h in hooks)
    script = CI_RUN.read_text(encoding="utf-8")
    for tool in ("ruff check", "ruff format", "mypy --strict src/adk_otel"):
        assert tool in entries, f"pre-commit has no {tool!r} hook"
        assert tool in script


def test_ci_runs_every_check_of_ci_run() -> None:
    script = CI_RUN.read_text(encoding="utf-8")
    steps = _steps_text(_load(CI))
    for check in CHECKS:
        assert check in script, f".ci/run no longer runs {check!r}: update this list"
        assert check in steps, f"CI does not run {check!r}"
    # The oldest google-adk with every dependency at the floor .ci/run installs.
    floors = [*re.findall(r"'([\w.-]+==[\w.]+)'", script), "google-adk==2.5.0"]
    assert floors and all(pin in steps for pin in floors), floors


def test_ci_matrix_is_every_python_by_oldest_and_newest_adk() -> None:
    matrix = _load(CI)["jobs"]["tests"]["strategy"]["matrix"]
    assert matrix["python"] == ["3.11", "3.12", "3.13"]
    assert sorted(matrix["adk"]) == ["newest", "oldest"]


def test_release_publishes_with_trusted_publishing() -> None:
    workflow = _load(RELEASE)
    assert workflow[True]["push"]["tags"] == ["v*"]  # YAML 1.1 reads the key `on` as True
    publish = workflow["jobs"]["publish"]
    assert publish["permissions"] == {"id-token": "write"}
    assert any(
        str(s.get("uses", "")).startswith("pypa/gh-action-pypi-publish@") for s in publish["steps"]
    )
    assert not any("password" in (s.get("with") or {}) for s in publish["steps"]), "no token"
    uploads_what_it_checked = ".ci/wheel-smoke .venv/bin/python dist" in _steps_text(workflow)
    assert uploads_what_it_checked
