"""README.md is also the PyPI page: every link must work there (absolute), and
every file or anchor of this repository it points at must exist."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
REPOSITORY = "https://github.com/adk-otel/adk-otel"
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)|<(https?://[^>\s]+)>")
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
# Paths written in backticks that name a file or folder of this repository.
_REPO_PATH = re.compile(r"`((?:src|docs|tests|benchmarks|collector-config|\.ci)/[\w./-]*)`")
# Paths in the user's project the docs tell them to create, not files of this repository.
_USERS_OWN = {"tests/test_shop_traces.py"}


def _links(text: str) -> list[str]:
    prose = _FENCE.sub("", text)
    return [a or b for a, b in _LINK.findall(prose)]


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    prose = _FENCE.sub("", path.read_text(encoding="utf-8"))
    return {_slug(m) for m in re.findall(r"^#{1,6}\s+(.+?)\s*#*$", prose, re.M)}


def test_every_link_is_absolute() -> None:
    links = _links(README.read_text(encoding="utf-8"))
    assert links, "no links found: the pattern is broken"
    relative = [link for link in links if not urlsplit(link).scheme]
    assert not relative, f"relative links break on PyPI, make them absolute: {relative}"


def test_links_into_the_repository_name_existing_files_and_anchors() -> None:
    checked = 0
    for link in _links(README.read_text(encoding="utf-8")):
        if not link.startswith(REPOSITORY + "/"):
            continue
        rest = link.removeprefix(REPOSITORY + "/")
        kind, _, path_and_anchor = rest.partition("/main/")
        if kind not in ("blob", "tree"):
            assert rest in ("issues", "releases"), f"unexpected repository link {link}"
            continue
        path, _, anchor = path_and_anchor.partition("#")
        target = ROOT / path
        assert target.exists(), f"{link}: {path} does not exist"
        assert (kind == "tree") == target.is_dir(), f"{link}: use /tree/ for folders only"
        if anchor:
            assert anchor in _anchors(target), f"{link}: no heading #{anchor} in {path}"
        checked += 1
    assert checked >= 5


def test_repository_paths_named_in_the_readme_and_the_docs_exist() -> None:
    named = {
        (doc.name, path)
        for doc in [README, *sorted((ROOT / "docs").glob("*.md"))]
        for path in _REPO_PATH.findall(doc.read_text(encoding="utf-8"))
    }
    assert named, "no paths found: the pattern is broken"
    missing = sorted(
        (doc, path) for doc, path in named if path not in _USERS_OWN and not (ROOT / path).exists()
    )
    assert not missing, missing


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        (
            "Propagation across one A2A call (propagation.py)",
            "propagation-across-one-a2a-call-propagationpy",
        ),
        ("Poison data never loses other data", "poison-data-never-loses-other-data"),
    ],
)
def test_anchor_slugs_follow_github(heading: str, anchor: str) -> None:
    assert _slug(heading) == anchor
