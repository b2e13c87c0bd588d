"""Names a package loads on first use (PEP 562 module ``__getattr__``).

Importing ``adk_otel``, its test helpers or its trace reader costs nothing
until a name is used: google-adk alone takes most of a second to import, and
pytest (for the plugin) and the CLI import these packages without needing it.
This module imports nothing of adk-otel, so the reading half may use it too.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any


def loader(
    package: str, namespace: dict[str, Any], exports: Mapping[str, str]
) -> Callable[[str], Any]:
    """A package's ``__getattr__``: each name in ``exports`` is imported
    from its module (relative to ``package``) when first used, and kept in
    ``namespace`` (the package's globals), so later uses are plain lookups."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value
        return value

    return __getattr__


def listing(namespace: dict[str, Any], names: Iterable[str]) -> Callable[[], list[str]]:
    """A package's ``__dir__``: the names it holds and the names it can load."""

    def __dir__() -> list[str]:
        return sorted({*namespace, *names})

    return __dir__
