"""What a new user meets first in the README: the install line that works
today, a snippet whose trace is named after the app, and the notes a first
run needs (service name, metrics, what the pytest example requires)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)

FIRST_RELEASE_ON_PYPI = False
"""Set to True with the first upload to PyPI (docs/releasing.md): until then
``pip install adk-otel`` finds nothing, and the README must not offer it."""


def _python_blocks() -> list[str]:
    return [body for lang, body in _FENCE.findall(README) if lang == "python"]


def test_the_first_lines_are_the_two_fresh_machine_commands() -> None:
    assert README.startswith(
        "# adk-otel\n\n```bash\n"
        "python3 -m venv .venv && .venv/bin/pip install -c requirements/test.txt -e . "
        "&& .venv/bin/adk-otel demo\n"
        ".venv/bin/pip install -c requirements/test.txt -e '.[test]' "
        "&& .venv/bin/python -m pytest\n```\n"
    )


def test_every_install_line_works_before_the_first_release() -> None:
    # Sentences that name the index install to say it does not work yet are not instructions.
    sentences = re.split(r"(?<=[.:])\s", re.sub(r"[ \t]*\n[ \t]*", " ", README))
    instructions = " ".join(
        s for s in sentences if "finds nothing" not in s and "first release" not in s
    )
    installs = re.findall(r"pip install (?!-e )([^`\n#]*adk[-_]otel[^`\n#]*)", instructions)
    assert installs, "no install line found: the pattern is broken"
    if FIRST_RELEASE_ON_PYPI:
        return
    from_index = [
        line
        for line in installs
        if "git+https://github.com/adk-otel/adk-otel" not in line
        and "file:///" not in line
        and ".whl" not in line
    ]
    # Extras named in passing are covered by the sentence in "Install and use".
    from_index = [line for line in from_index if not re.fullmatch(r"'adk-otel\[\w+\]'", line)]
    assert not from_index, f"install lines that need a release on PyPI: {from_index}"
    first_use = README.index("**Use it in your project:**")
    assert "not on PyPI yet" in README[first_use : first_use + 200]
    assert "install the same way until the first" in README


def test_every_runner_in_a_snippet_names_its_app() -> None:
    runners = [
        line
        for block in _python_blocks()
        for line in block.splitlines()
        if "InMemoryRunner(" in line
    ]
    assert runners, "no InMemoryRunner in the README's snippets: the pattern is broken"
    unnamed = [line.strip() for line in runners if "app_name=" not in line]
    assert not unnamed, f"the root span would be 'invocation InMemoryRunner': {unnamed}"


def test_the_first_run_notes_stand_next_to_the_snippet() -> None:
    first_use = README.index("**Use it in your project:**")
    near = README[first_use : first_use + 1500]
    assert "unknown_service" in near and "OTEL_SERVICE_NAME" in near
    assert "invocation InMemoryRunner" in near


def test_the_pytest_example_says_what_it_needs() -> None:
    section = README.split("## Assert on traces in CI", 1)[1].split("\n## ", 1)[0]
    assert "@pytest.mark.asyncio" in section
    assert "pip install pytest-asyncio" in section
    assert 'asyncio_mode = "auto"' in section
