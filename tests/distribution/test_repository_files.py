"""What a clone gets: no tracked file may point outside the repository (a
symlink to an absolute path on the machine that committed it dangles in every
other clone)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _tracked_symlinks() -> list[tuple[str, str]]:
    """(path, target) of every symlink git tracks (mode 120000)."""
    listing = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-s", "-z"],
        capture_output=True,
        check=True,
    ).stdout.decode()
    links = []
    for entry in filter(None, listing.split("\0")):
        meta, _, path = entry.partition("\t")
        if meta.split()[0] == "120000":
            links.append((path, os.readlink(ROOT / path) if (ROOT / path).is_symlink() else ""))
    return links


def test_no_tracked_symlink_points_out_of_the_repository() -> None:
    outside = []
    for path, target in _tracked_symlinks():
        resolved = (ROOT / path).parent.joinpath(target).resolve()
        if os.path.isabs(target) or not resolved.is_relative_to(ROOT.resolve()):
            outside.append(f"{path} -> {target}")
    assert not outside, f"tracked symlinks pointing out of the repository: {outside}"


def test_gitignore_covers_virtual_environments_as_files_and_folders() -> None:
    patterns = (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    # ".venv*/" matches folders only; a symlink named .venv-main is a file to git.
    assert ".venv*" in patterns, patterns
