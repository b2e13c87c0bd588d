"""The documentation site builds from docs/ with ``mkdocs build --strict``:
every relative link and anchor resolves, every page is in the navigation, and
the API reference is generated from the docstrings."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


class _Loader(yaml.SafeLoader):
    """mkdocs.yml names a Python callable (the slugifier); only its shape matters here."""


_Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda *_: None)


def _nav_pages(nav: object) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [page for item in nav for page in _nav_pages(item)]
    if isinstance(nav, dict):
        return [page for value in nav.values() for page in _nav_pages(value)]
    return []


def test_every_page_is_in_the_navigation() -> None:
    config = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=_Loader)
    pages = _nav_pages(config["nav"])
    assert len(pages) == len(set(pages)), pages
    assert sorted(pages) == sorted(p.name for p in DOCS.glob("*.md"))
    first = [p for p in pages[:4]]
    assert first[:2] == ["index.md", "getting-started.md"], first


def test_the_site_builds_strictly_with_the_api_reference(tmp_path: Path) -> None:
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    api = (site / "api" / "index.html").read_text(encoding="utf-8")
    for name in ("instrument", "uninstrument", "AdkOtelPlugin", "error_classifier"):
        assert name in api, name
    assert (site / "search" / "search_index.json").is_file(), "the search box has an index"
